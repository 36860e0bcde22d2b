//! Child processes that go with their parent: the parent-death signal, a signal by
//! process id, and waiting for a child's end without reaping it.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Have the process `cmd` spawns get signal `sig` (e.g. `libc::SIGKILL`) when the
/// thread that spawns it ends, also when the whole parent is killed with SIGKILL
/// (`PR_SET_PDEATHSIG`, prctl(2)). The setting holds across `execve` of a program that
/// is neither set-user-ID nor has file capabilities (`ip netns exec` keeps it for the
/// command it runs). Spawn from a thread that lives as long as the child should: the
/// kernel watches the thread, not the process. When the parent has ended before the
/// child set it, the child does not run (spawn fails with `ESRCH`).
pub fn die_with_parent(cmd: &mut Command, sig: i32) {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let set = move || -> io::Result<()> {
        // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and no pointers; it is a
        // plain system call, safe between fork and exec.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: getppid has no preconditions.
        if unsafe { libc::getppid() } != parent {
            // The parent ended before the setting: its signal will never come.
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    };
    // SAFETY: the closure makes only system calls (prctl, getppid) and builds errors
    // from errno without allocating: nothing that is unsafe between fork and exec.
    unsafe { cmd.pre_exec(set) };
}

/// Send signal `sig` to process `pid` (kill(2)). `pid` must name one process: 0 and
/// numbers above `i32::MAX` (which kill(2) reads as process groups) are `InvalidInput`.
pub fn signal(pid: u32, sig: i32) -> io::Result<()> {
    let pid = pid_t(pid)?;
    // SAFETY: kill takes two integers and no pointers.
    crate::sys::cvt(unsafe { libc::kill(pid, sig) }).map(drop)
}

/// Wait until child `pid` of this process has ended, and leave it to be reaped
/// (waitid(2) with `WNOWAIT`): its process id stays taken, so a signal sent to it
/// before it is reaped reaches no other process.
pub fn wait_exited(pid: u32) -> io::Result<()> {
    let pid = pid_t(pid)?;
    loop {
        // SAFETY: an all-zero siginfo_t is a valid value of the plain C struct.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t for the call to fill.
        let ret = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        match crate::sys::cvt(ret) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Whether this process ignores signal `sig` (`SIG_IGN`, as `nohup` leaves SIGHUP for
/// the program it runs), read with sigaction(2) without changing it.
pub fn ignored(sig: i32) -> io::Result<bool> {
    // SAFETY: an all-zero sigaction is a valid value of the plain C struct.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action makes sigaction only write the current one to `old`,
    // a valid, writable sigaction.
    crate::sys::cvt(unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) })?;
    Ok(old.sa_sigaction == libc::SIG_IGN)
}

fn pid_t(pid: u32) -> io::Result<libc::pid_t> {
    match libc::pid_t::try_from(pid) {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{pid} is not a process id"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn a_child_dies_with_the_thread_that_spawned_it() {
        let child = std::thread::spawn(|| {
            let mut cmd = Command::new("sleep");
            cmd.arg("600");
            die_with_parent(&mut cmd, libc::SIGKILL);
            cmd.spawn().unwrap()
        })
        .join()
        .unwrap();
        let mut child = child;
        // The kernel signals it as the thread exits; a minute is for a busy host, and
        // without the setting the sleep would still be running then.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the child outlived the thread that spawned it");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
    }

    #[test]
    fn an_ignored_signal_is_seen_as_ignored() {
        // SAFETY: signal(2) with SIG_IGN for SIGTTOU, which no test here handles.
        unsafe { libc::signal(libc::SIGTTOU, libc::SIG_IGN) };
        assert!(ignored(libc::SIGTTOU).unwrap());
        // SAFETY: as above, back to the default.
        unsafe { libc::signal(libc::SIGTTOU, libc::SIG_DFL) };
        assert!(!ignored(libc::SIGTTOU).unwrap());
        assert!(ignored(1000).is_err());
    }

    #[test]
    fn a_signal_reaches_its_process_and_its_end_is_seen_before_it_is_reaped() {
        let mut child = Command::new("sleep").arg("600").spawn().unwrap();
        signal(child.id(), libc::SIGTERM).unwrap();
        wait_exited(child.id()).unwrap();
        // Still there to be reaped, with its status.
        assert!(std::path::Path::new(&format!("/proc/{}", child.id())).exists());
        let status = child.try_wait().unwrap().expect("ended");
        assert_eq!(status.signal(), Some(libc::SIGTERM));
        for bad in [0, u32::MAX] {
            assert_eq!(
                signal(bad, libc::SIGTERM).unwrap_err().kind(),
                io::ErrorKind::InvalidInput
            );
        }
    }
}
