//! Intake's first line against comment floods: comments whose authors GitHub says are not the
//! repository's (`author_association`) are queued at most so many per repository in any hour,
//! per server process. Past that a delivery is recorded without a job, so neither a worker nor
//! the conversation's turn is spent on it; under it, the job still asks GitHub who may write and
//! answers within the repository's `outsiders.answers_per_hour`.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The rate's window.
const HOUR: Duration = Duration::from_secs(3600);

/// The default number of outsiders' comments queued per repository in any hour.
pub const DEFAULT_PER_HOUR: u32 = 20;

#[derive(Debug)]
pub struct OutsiderIntake {
    per_hour: u32,
    /// When each repository's recent outsiders' comments were queued, oldest first.
    queued: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl OutsiderIntake {
    /// `per_hour` 0 queues none.
    pub fn new(per_hour: u32) -> Self {
        OutsiderIntake {
            per_hour,
            queued: Mutex::new(HashMap::new()),
        }
    }

    /// Whether one more outsider's comment on `repository` may be queued now; if so it is
    /// counted.
    pub fn admit(&self, repository: &str, now: Instant) -> bool {
        let mut queued = self
            .queued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Forget repositories whose window emptied, so the map stays as small as the hour's
        // activity.
        queued.retain(|_, times| {
            while times
                .front()
                .is_some_and(|t| now.saturating_duration_since(*t) >= HOUR)
            {
                times.pop_front();
            }
            !times.is_empty()
        });
        let times = queued.entry(repository.to_owned()).or_default();
        if times.len() >= usize::try_from(self.per_hour).unwrap_or(usize::MAX) {
            return false;
        }
        times.push_back(now);
        true
    }

    pub fn per_hour(&self) -> u32 {
        self.per_hour
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_repository_has_its_own_hour() {
        let intake = OutsiderIntake::new(2);
        let start = Instant::now();
        assert!(intake.admit("a/x", start));
        assert!(intake.admit("a/x", start));
        assert!(!intake.admit("a/x", start + Duration::from_secs(10)));
        assert!(intake.admit("b/y", start + Duration::from_secs(10)));
        assert!(intake.admit("a/x", start + HOUR));
        assert!(!OutsiderIntake::new(0).admit("a/x", start));
    }
}
