//! A forge that writes only while a job still holds its lease: the App server's worker whose
//! lease ran out (it stalled, or another worker took the job over) must not write to GitHub any
//! more. Reads pass through; every write asks the fence first.

use std::sync::Arc;

use async_trait::async_trait;

use crate::{Forge, ForgeError, ForgeLayer, Write, Written};

/// Whether the job may still write (cheap: asked before every write).
#[derive(Clone)]
pub struct Fence(Arc<dyn Fn() -> bool + Send + Sync>);

impl Fence {
    pub fn new(holds: impl Fn() -> bool + Send + Sync + 'static) -> Fence {
        Fence(Arc::new(holds))
    }

    /// `Ok` while the job holds its lease; a write after that is refused.
    pub fn check(&self) -> Result<(), ForgeError> {
        if (self.0)() {
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

impl std::fmt::Debug for Fence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fence")
    }
}

#[derive(Debug)]
pub struct FencedForge {
    inner: Arc<dyn Forge>,
    fence: Fence,
}

impl FencedForge {
    pub fn new(inner: Arc<dyn Forge>, fence: Fence) -> Self {
        FencedForge { inner, fence }
    }
}

#[async_trait]
impl ForgeLayer for FencedForge {
    fn inner(&self) -> &dyn Forge {
        &*self.inner
    }

    async fn write(&self, write: Write<'_>) -> Result<Written, ForgeError> {
        self.fence.check()?;
        self.inner.write(write).await
    }

    fn may_push(&self) -> Result<(), ForgeError> {
        self.fence.check()?;
        self.inner.may_push()
    }
}
