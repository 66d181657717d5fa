//! A generated source tree for comparing grep with ripgrep (shared by the test and the benchmark).

#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;

/// Writes `files` source files of `lines` lines under `root` (a git repository), plus the cases
/// a search must treat like ripgrep: an ignored directory, a hidden file, a binary file, a
/// non-UTF-8 line.
pub fn generate(root: &Path, files: usize, lines: usize) {
    std::process::Command::new("git")
        .arg("init")
        .arg("-q")
        .arg(root)
        .status()
        .unwrap();
    std::fs::write(root.join(".gitignore"), "build/\n*.log\n").unwrap();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for file in 0..files {
        let dir = root.join(format!("src/module_{}", file % 40));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::with_capacity(lines * 40);
        for line in 0..lines {
            let n = next() % 1000;
            match n % 10 {
                0 => text.push_str(&format!(
                    "fn handler_{n}(request: &Request) -> Result<Response, Error> {{\n"
                )),
                1 => text.push_str(&format!("    // TODO: validate input {line}\n")),
                2 => text.push_str(&format!(
                    "    let value_{n} = parse_header(&request, \"x-id-{n}\")?;\n"
                )),
                3 => text.push_str("}\n"),
                _ => text.push_str(&format!("    total += compute_{n}(value, {line});\n")),
            }
        }
        std::fs::write(dir.join(format!("file_{file}.rs")), text).unwrap();
    }
    std::fs::create_dir_all(root.join("build")).unwrap();
    std::fs::write(
        root.join("build/generated.rs"),
        "fn handler_1() {} // TODO: ignored\n",
    )
    .unwrap();
    std::fs::write(root.join("debug.log"), "TODO: ignored log\n").unwrap();
    std::fs::write(root.join(".hidden.rs"), "// TODO: hidden\n").unwrap();
    std::fs::write(root.join("src/blob.bin"), b"TODO: binary\0\x01\x02\n").unwrap();
    std::fs::write(
        root.join("src/latin1.rs"),
        b"// TODO: caf\xe9\nfn handler_7() {}\n",
    )
    .unwrap();
}
