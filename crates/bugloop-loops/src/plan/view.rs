//! What a later pass of a review is shown of a part: the files of the kinds it judges, the rest
//! named. A part puts the more important kinds first, so a view's text is a prefix of the
//! part's and a prefix cache still serves it.

use super::{Batch, Importance, estimate_tokens};
use bugloop_domain::paths::prompt_path;

/// A part as a later pass is shown it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct View {
    /// The sections of the files shown, in the part's order.
    pub text: String,
    /// The paths of the files left out as a prompt shows them ([`prompt_path`]), each once, in
    /// the part's order.
    pub left_out: Vec<String>,
    /// What leaving them out saves, estimated.
    pub saved_tokens: u64,
}

impl Batch {
    /// The part with only the files of kind `least` or a more important one, or `None` when
    /// that leaves nothing out.
    pub(crate) fn view(&self, least: Importance) -> Option<View> {
        let mut view = View {
            text: String::new(),
            left_out: Vec::new(),
            saved_tokens: 0,
        };
        for section in &self.sections {
            let text = self.text.get(section.range.clone())?;
            if section.kind >= least {
                view.text.push_str(text);
                continue;
            }
            view.saved_tokens += estimate_tokens(text);
            let path = prompt_path(&section.path);
            if !view.left_out.iter().any(|known| *known == path) {
                view.left_out.push(path.into_owned());
            }
        }
        (!view.left_out.is_empty()).then_some(view)
    }
}
