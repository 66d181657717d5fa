//! A forge that writes only while a job still holds its lease: the App server's worker whose
//! lease ran out (it stalled, or another worker took the job over) must not write to GitHub any
//! more. Reads pass through; every write asks the fence first.

use std::sync::Arc;

use async_trait::async_trait;

use crate::{Forge, ForgeError, ForgeLayer, Write, Written};

/// Whether the job may still write (cheap: asked before every write).
pub type Fence = Arc<dyn Fn() -> bool + Send + Sync>;

pub struct FencedForge {
    inner: Arc<dyn Forge>,
    fence: Fence,
}

impl std::fmt::Debug for FencedForge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FencedForge")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl FencedForge {
    pub fn new(inner: Arc<dyn Forge>, fence: Fence) -> Self {
        FencedForge { inner, fence }
    }

    fn may_write(&self) -> Result<(), ForgeError> {
        if (self.fence)() {
            Ok(())
        } else {
            Err(ForgeError::Forbidden(
                "this job's lease was lost (another worker owns the job now); nothing more is \
                 written"
                    .to_owned(),
            ))
        }
    }
}

#[async_trait]
impl ForgeLayer for FencedForge {
    fn inner(&self) -> &dyn Forge {
        &*self.inner
    }

    async fn write(&self, write: Write<'_>) -> Result<Written, ForgeError> {
        self.may_write()?;
        self.inner.write(write).await
    }

    fn may_push(&self) -> Result<(), ForgeError> {
        self.may_write()?;
        self.inner.may_push()
    }
}
