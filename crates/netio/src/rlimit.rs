//! Process limits a sender or receiver of thousands of flows runs into.

use std::io;

/// Raises the soft limit on open descriptors (`RLIMIT_NOFILE`) to the hard limit, as a
/// program that holds one socket per TCP flow needs with thousands of flows (the soft
/// limit is often 1,024). Returns the soft limit now in force.
pub fn raise_nofile() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit struct.
    crate::sys::cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `want` is a valid rlimit struct, read by the call.
        crate::sys::cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) })?;
        lim.rlim_cur = lim.rlim_max;
    }
    Ok(lim.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_ends_at_the_hard_limit() {
        let soft = raise_nofile().unwrap();
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `lim` is a valid, writable rlimit struct.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
        assert_eq!((soft, lim.rlim_cur), (lim.rlim_max, lim.rlim_max));
    }
}
