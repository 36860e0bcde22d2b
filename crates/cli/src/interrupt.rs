//! Ctrl-C handling: the first interrupt asks every loop to stop and keep what it measured;
//! a second one exits at once.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The process-wide stop flag, installing the handler on first use.
pub(crate) fn flag() -> Arc<AtomicBool> {
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let hits = AtomicUsize::new(0);
        let f = flag.clone();
        let installed = ctrlc::set_handler(move || {
            if hits.fetch_add(1, Ordering::SeqCst) > 0 {
                eprintln!("dualperf: interrupted twice, exiting without a summary");
                std::process::exit(130);
            }
            eprintln!("dualperf: interrupted, finishing up (Ctrl-C again to quit at once)");
            f.store(true, Ordering::SeqCst);
        });
        if let Err(e) = installed {
            eprintln!("dualperf: warning: cannot install the Ctrl-C handler: {e}");
        }
        flag
    })
    .clone()
}
