//! The settings that choose a way of working: how jobs are fetched, and
//! which missed periodic slots run.

use crate::error::{Error, Result};

/// How processors take jobs off their queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchMode {
    /// Atomic move into a per-process in-progress list (needs Redis >= 6.2):
    /// a job survives its process dying.
    Reliable,
    /// `BLMPOP` (or `BRPOP`): once popped a job lives only in the
    /// process's memory.
    Basic,
}

impl std::str::FromStr for FetchMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "reliable" => Ok(FetchMode::Reliable),
            "basic" => Ok(FetchMode::Basic),
            other => Err(Error::config(
                "fetch",
                format!("{other:?}"),
                "must be \"reliable\" or \"basic\"",
            )),
        }
    }
}

/// What the periodic ticker does with slots missed while no process ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatchUp {
    /// Fire only the most recent missed slot.
    Latest,
    /// Fire every missed slot (bounded).
    All,
}

impl std::str::FromStr for CatchUp {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "latest" => Ok(CatchUp::Latest),
            "all" => Ok(CatchUp::All),
            other => Err(Error::config(
                "periodic_catch_up",
                format!("{other:?}"),
                "must be \"latest\" or \"all\"",
            )),
        }
    }
}

/// Whose keys and formats a namespace uses (docs/sidekiq.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// cogworker's own: every key under the namespace.
    Cogworker,
    /// Sidekiq's (OSS 6.x to 8.x): its queues, schedule, retry and dead
    /// sets, processes and counters under their bare names, where Sidekiq
    /// processes, clients and its Web UI read them; what Sidekiq has no
    /// key for (the in-progress records, groups, batches...) stays under
    /// the namespace, where Sidekiq never looks.
    Sidekiq,
}

impl std::str::FromStr for Layout {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "cogworker" => Ok(Layout::Cogworker),
            "sidekiq" => Ok(Layout::Sidekiq),
            other => Err(Error::config(
                "layout",
                format!("{other:?}"),
                "must be \"cogworker\" or \"sidekiq\"",
            )),
        }
    }
}

impl Layout {
    /// The name the setting takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Layout::Cogworker => "cogworker",
            Layout::Sidekiq => "sidekiq",
        }
    }
}
