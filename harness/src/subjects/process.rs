//! Every process the harness starts leads a process group of its own and
//! carries a marker in its environment, which its children inherit. Ending
//! a case kills the groups and then sweeps any process that still carries
//! the case's marker (a worker's commands sit in groups of their own), so
//! nothing outlives the case, even after Ctrl-C.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// The environment variable that marks a case's processes.
pub const MARKER: &str = "UKUE_CONFORMANCE_CASE";

/// Live markers, so that Ctrl-C can sweep every case at once.
static MARKERS: Mutex<BTreeMap<String, ()>> = Mutex::new(BTreeMap::new());

fn markers() -> std::sync::MutexGuard<'static, BTreeMap<String, ()>> {
    MARKERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The processes of one case.
#[derive(Debug)]
pub struct Procs {
    marker: String,
    groups: Mutex<Vec<i32>>,
}

impl Procs {
    pub fn new(marker: String) -> Procs {
        markers().insert(marker.clone(), ());
        Procs { marker, groups: Mutex::new(Vec::new()) }
    }

    /// The marker of this case's processes (the value of [`MARKER`]).
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// Starts `cmd` as the leader of a new process group, marked.
    pub fn spawn(&self, cmd: &mut Command) -> io::Result<Spawned> {
        cmd.process_group(0).env(MARKER, &self.marker);
        let child = cmd.spawn()?;
        let pid = child.id() as i32;
        self.groups.lock().unwrap_or_else(|p| p.into_inner()).push(pid);
        Ok(Spawned { child, pid, reaped: false })
    }

    /// Kills every group this case started and every marked process. A
    /// group is killed once: after that its id may be reused by another
    /// program's group.
    pub fn kill_all(&self) {
        let groups = std::mem::take(&mut *self.groups.lock().unwrap_or_else(|p| p.into_inner()));
        for group in groups {
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
        }
        sweep(&self.marker);
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        self.kill_all();
        markers().remove(&self.marker);
    }
}

/// Kills the processes of every case still running (on Ctrl-C).
pub fn kill_every_case() {
    let live: Vec<String> = markers().keys().cloned().collect();
    for marker in live {
        sweep(&marker);
    }
}

/// SIGKILLs every process whose environment holds `MARKER=marker`, until
/// none is left (a process may fork while we look).
fn sweep(marker: &str) {
    let needle = format!("{MARKER}={marker}").into_bytes();
    let me = std::process::id() as i32;
    for _ in 0..20 {
        let mut found = false;
        let Ok(entries) = std::fs::read_dir("/proc") else { return };
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
            if pid == me {
                continue;
            }
            let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
            if environ.split(|b| *b == 0).any(|var| var == needle.as_slice()) {
                // A zombie keeps its environ only while it runs; reading it
                // succeeded, so it is alive.
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                found = true;
            }
        }
        if !found {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A started process; killed with its group when dropped.
#[derive(Debug)]
pub struct Spawned {
    pub child: Child,
    pid: i32,
    /// Reaped by [`Spawned::wait_with_cpu`], behind the std `Child`'s back:
    /// its pid may be another process's by now.
    reaped: bool,
}

impl Spawned {
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Sends `signal` to the process alone.
    pub fn signal(&self, signal: Signal) {
        let _ = kill(Pid::from_raw(self.pid), signal);
    }

    /// Sends `signal` to the process's whole group.
    pub fn signal_group(&self, signal: Signal) {
        let _ = killpg(Pid::from_raw(self.pid), signal);
    }

    /// Waits for the process to end, up to `limit`.
    pub fn wait_timeout(&mut self, limit: Duration) -> io::Result<Option<ExitStatus>> {
        wait_timeout(&mut self.child, limit)
    }

    /// Waits for the process to end, up to `limit`, and reaps it with the
    /// CPU time it spent (user and system, with the children it waited
    /// for; crate::subjects::observe::cpu).
    pub fn wait_with_cpu(&mut self, limit: Duration) -> io::Result<Option<(ExitStatus, Duration)>> {
        let pid = self.pid;
        let ended = wait_for_exit(pid as u32, limit, || reap_with_cpu(pid))?;
        self.reaped = ended.is_some();
        Ok(ended)
    }
}

/// `wait4(pid, WNOHANG)`: the exit status and CPU time of `pid` once it has
/// ended, None while it runs.
fn reap_with_cpu(pid: i32) -> io::Result<Option<(ExitStatus, Duration)>> {
    use nix::libc;
    use std::os::unix::process::ExitStatusExt;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals for the length of the call.
    let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
    if reaped < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted { Ok(None) } else { Err(e) };
    }
    if reaped == 0 {
        return Ok(None);
    }
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    Ok(Some((ExitStatus::from_raw(status), time(usage.ru_utime) + time(usage.ru_stime))))
}

/// Waits for `child` to end, up to `limit`: woken by its exit (a pidfd,
/// Linux 5.3 on), not by a poll, so a command of 15 ms is not reported
/// done up to 10 ms late; where there is no pidfd, polls every 10 ms.
pub fn wait_timeout(child: &mut Child, limit: Duration) -> io::Result<Option<ExitStatus>> {
    let pid = child.id();
    wait_for_exit(pid, limit, || child.try_wait())
}

/// Asks `ended` (a reap that does not block) until it has the ended
/// process `pid`, up to `limit`, woken by the exit itself.
fn wait_for_exit<T>(
    pid: u32,
    limit: Duration,
    mut ended: impl FnMut() -> io::Result<Option<T>>,
) -> io::Result<Option<T>> {
    let deadline = Instant::now() + limit;
    if let Some(done) = ended()? {
        return Ok(Some(done));
    }
    // Not reaped yet (`ended` found it running, and only we reap it), so
    // the pid is still this child's.
    let exit = ExitFd::open(pid);
    loop {
        if let Some(done) = ended()? {
            return Ok(Some(done));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        match &exit {
            Some(fd) => fd.wait(left),
            None => std::thread::sleep(left.min(Duration::from_millis(10))),
        }
    }
}

/// A pidfd: readable once its process has ended.
struct ExitFd(std::os::fd::OwnedFd);

impl ExitFd {
    fn open(pid: u32) -> Option<ExitFd> {
        use nix::libc;
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes two integers and returns a new file
        // descriptor (or -1), which the OwnedFd then owns alone.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0 as libc::c_uint) };
        let fd = libc::c_int::try_from(fd).ok().filter(|fd| *fd >= 0)?;
        // SAFETY: the descriptor is new, and nothing else owns it.
        Some(ExitFd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    /// Returns when the process has ended, after `limit`, or on a signal
    /// (a poll that fails otherwise waits 10 ms, as without a pidfd).
    fn wait(&self, limit: Duration) {
        use nix::libc;
        use std::os::fd::AsRawFd;
        let mut poll = libc::pollfd { fd: self.0.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // Rounded up, so that a wait never spins on a timeout of 0 ms.
        let ms = limit.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: one pollfd, alive for the call.
        if unsafe { libc::poll(&mut poll, 1, ms) } < 0
            && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted
        {
            std::thread::sleep(limit.min(Duration::from_millis(10)));
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        if let Ok(None) = self.child.try_wait() {
            let _ = killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
            let _ = self.child.wait();
        }
    }
}
