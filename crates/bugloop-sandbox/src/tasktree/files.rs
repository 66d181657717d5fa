//! Reading and writing single files of a task tree for bugloop's own tools, never through a
//! link or outside the tree's real directories.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::TaskTree;
use super::changes::{plain, read_regular};
use super::export::parents_below;

impl TaskTree {
    /// The content of the regular file at `relative` in the tree, read as data: never through a
    /// symlink (neither the file nor a directory above it), never a FIFO or a device, at most
    /// `max` bytes. What an agent wrote is read on the host only this way.
    pub fn read_regular_file(&self, relative: &Path, max: u64) -> Result<Vec<u8>, String> {
        if !plain(relative) || !self.inside_real_directories(relative) {
            return Err(format!(
                "{} is not a plain path inside the tree",
                relative.display()
            ));
        }
        match read_regular(&self.tree.join(relative), max) {
            Ok(Ok(content)) if content.len() as u64 <= max => Ok(content),
            Ok(Ok(_)) => Err(format!("{} is larger than {max} bytes", relative.display())),
            Ok(Err(reason)) if reason.ends_with("bugloop commits") => {
                Err(format!("{} is larger than {max} bytes", relative.display()))
            }
            Ok(Err(reason)) => Err(format!("{} {reason}", relative.display())),
            Err(error) => Err(error.to_string()),
        }
    }

    /// Puts `content` at `relative` as a regular file of mode 0644 (a test bugloop places),
    /// whatever the tree held there: a file or a symlink is replaced, never followed; missing
    /// directories above it are made, and one that is not a real directory (a symlink out of
    /// the tree, say) refuses the write. Nothing outside the tree is ever written.
    pub fn write_regular_file(&self, relative: &Path, content: &[u8]) -> Result<(), String> {
        if !plain(relative) {
            return Err(format!(
                "{} is not a plain path inside the tree",
                relative.display()
            ));
        }
        for current in parents_below(&self.tree, relative) {
            match std::fs::symlink_metadata(&current) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(format!(
                        "{} is not a directory of the tree",
                        current
                            .strip_prefix(&self.tree)
                            .unwrap_or(&current)
                            .display()
                    ));
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::create_dir(&current).map_err(|e| e.to_string())?;
                }
                Err(error) => return Err(error.to_string()),
            }
        }
        self.remove_file(relative)?;
        let path = self.tree.join(relative);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&path)
            .map_err(|e| format!("{}: {e}", relative.display()))?;
        file.write_all(content)
            .map_err(|e| format!("{}: {e}", relative.display()))
    }

    /// Removes the file or symlink at `relative` (a symlink itself, never what it points to); a
    /// path that holds nothing is fine, a directory is refused.
    pub fn remove_file(&self, relative: &Path) -> Result<(), String> {
        if !plain(relative) || !self.inside_real_directories(relative) {
            return Err(format!(
                "{} is not a plain path inside the tree",
                relative.display()
            ));
        }
        let path = self.tree.join(relative);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => Err(format!("{} is a directory", relative.display())),
            Ok(_) => {
                std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", relative.display()))
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(format!("{}: {error}", relative.display())),
        }
    }

    pub(super) fn inside_real_directories(&self, relative: &Path) -> bool {
        parents_below(&self.tree, relative)
            .all(|current| std::fs::symlink_metadata(current).is_ok_and(|m| m.is_dir()))
    }
}
