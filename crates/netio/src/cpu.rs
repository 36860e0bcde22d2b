//! Where a thread runs: pinning to one CPU (`sched_setaffinity(2)`).

use std::io;
use std::mem::{size_of, zeroed};

/// Pins the calling thread to CPU `cpu` (`sched_setaffinity(0, …)`, which
/// acts on the calling thread only). Threads it starts afterwards inherit
/// the pinning; threads started before keep theirs.
///
/// Errors: `InvalidInput` for a CPU number beyond `CPU_SETSIZE` (1024) or
/// one this process may not use (`EINVAL` from the kernel: offline, absent,
/// or outside its cpuset).
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is beyond {}", libc::CPU_SETSIZE),
        ));
    }
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE, so the bit lies inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the
    // calling thread.
    let ret = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    if ret != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINVAL) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is not one this process may run on"),
            ));
        }
        return Err(e);
    }
    Ok(())
}

/// The CPUs the calling thread may run on (`sched_getaffinity`).
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: as above.
    let mut set: libc::cpu_set_t = unsafe { zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
    let ret = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: every index is below CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_pinned_to_an_allowed_cpu_runs_only_there() {
        let cpus = allowed_cpus().unwrap();
        let last = *cpus.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(last).unwrap();
            assert_eq!(allowed_cpus().unwrap(), vec![last]);
        })
        .join()
        .unwrap();
        // The caller's own set is untouched.
        assert_eq!(allowed_cpus().unwrap(), cpus);
    }

    #[test]
    fn an_impossible_cpu_is_invalid_input() {
        for cpu in [libc::CPU_SETSIZE as usize, 1000] {
            let e = std::thread::spawn(move || pin_current_thread(cpu).unwrap_err())
                .join()
                .unwrap();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{cpu}: {e}");
        }
    }
}
