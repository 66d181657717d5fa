//! An issue or change request of the local forge as a person reads it (`bugloop item N`): its
//! state, labels and body, and every comment of its conversation (an issue's comments, or a
//! draft's review threads), who wrote each and where. Locally there is no web page to look at a
//! draft or an escalation; this is it.

use bugloop_domain::thread::Comment;
use bugloop_forge::ChangeKey;
use bugloop_store::Item;
use serde::Serialize;

use crate::{App, AppError};

#[derive(Debug, Clone, Serialize)]
pub struct ItemView {
    #[serde(flatten)]
    pub item: Item,
    /// Its conversation, oldest first.
    pub comments: Vec<Comment>,
}

impl ItemView {
    /// Its body as a person reads it on the forge, without bugloop's hidden markers.
    pub fn body_as_read(&self) -> String {
        bugloop_domain::rmcoc::as_read(&self.item.body)
    }
}

impl App {
    /// Issue or change request `number` of the local forge, with its conversation.
    pub async fn item(&self, number: u64) -> Result<ItemView, AppError> {
        let local = self.local_store("bugloop item")?;
        let number = i64::try_from(number)
            .map_err(|_| AppError::Invalid(format!("no issue or change request #{number}")))?;
        let item = local.store().item(number).await?;
        let comments = self.forge.comments(&ChangeKey(item.conversation())).await?;
        Ok(ItemView { item, comments })
    }
}
