//! Why run directories could not be reported.

use std::path::{Path, PathBuf};

use lab::store::StoreError;

/// Why run directories could not be reported: a mistake in what was asked for (see
/// [`Error::is_usage`]) or a run directory that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A directory given is not a run directory.
    #[error("{0}")]
    Open(StoreError),
    /// A directory measured another plan than the first: repetitions do not pool.
    #[error(
        "{} measured another plan (or with/without --quick) than {}: report them separately",
        .dir.display(),
        .first.display()
    )]
    OtherPlan {
        /// The directory.
        dir: PathBuf,
        /// The first directory given.
        first: PathBuf,
    },
    /// The directories hold no finished run.
    #[error("no finished runs in {}", list(.dirs))]
    NoRuns {
        /// The directories given.
        dirs: Vec<PathBuf>,
    },
    /// A run directory's runs could not be read.
    #[error(transparent)]
    Store(StoreError),
}

impl Error {
    /// Whether the error is in what was asked for (the directories given), not a failure
    /// reading them.
    pub fn is_usage(&self) -> bool {
        !matches!(self, Self::Store(_))
    }
}

fn list(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| Path::display(d).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
