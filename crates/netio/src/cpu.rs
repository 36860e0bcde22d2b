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
    set_current_thread_cpus(&[cpu])
}

/// Lets the calling thread run on `cpus` only (see [`pin_current_thread`]).
pub fn set_current_thread_cpus(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is beyond {}", libc::CPU_SETSIZE),
            ));
        }
        // SAFETY: `cpu` < CPU_SETSIZE, so the bit lies inside `set`.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the
    // calling thread.
    let ret = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    if ret != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINVAL) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPUs {cpus:?}: none this process may run on"),
            ));
        }
        return Err(e);
    }
    Ok(())
}

/// What the scheduler did to the calling thread, from `/proc/thread-self`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedStats {
    /// Time it ran on a CPU, ns (`schedstat`, first field).
    pub run_ns: u64,
    /// Time it was runnable but waited for a CPU, ns (`schedstat`, second field):
    /// what other tasks took from it.
    pub wait_ns: u64,
    /// Times another task took its CPU while it could run
    /// (`nonvoluntary_ctxt_switches`).
    pub involuntary_switches: u64,
}

/// The calling thread's [`SchedStats`] (two small reads of `/proc`; `NotFound`
/// where the kernel has no schedstat).
pub fn thread_sched_stats() -> io::Result<SchedStats> {
    let sched = std::fs::read_to_string("/proc/thread-self/schedstat")?;
    let mut f = sched.split_whitespace().map(str::parse::<u64>);
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "unexpected /proc schedstat");
    let run_ns = f.next().and_then(Result::ok).ok_or_else(bad)?;
    let wait_ns = f.next().and_then(Result::ok).ok_or_else(bad)?;
    let status = std::fs::read_to_string("/proc/thread-self/status")?;
    let involuntary_switches = status
        .lines()
        .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(bad)?;
    Ok(SchedStats {
        run_ns,
        wait_ns,
        involuntary_switches,
    })
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
    fn the_scheduler_counts_a_thread_that_spins() {
        let a = thread_sched_stats().unwrap();
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(20) {}
        let b = thread_sched_stats().unwrap();
        assert!(b.run_ns > a.run_ns, "{a:?} {b:?}");
        assert!(b.wait_ns >= a.wait_ns && b.involuntary_switches >= a.involuntary_switches);
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
