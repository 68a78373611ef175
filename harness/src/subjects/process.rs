//! Every process the harness starts leads a process group of its own and
//! carries a marker in its environment, which its children inherit. Ending
//! a case kills the groups and then sweeps any process that still carries
//! the case's marker (a worker's commands sit in groups of their own), so
//! nothing outlives the case, even after Ctrl-C.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
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

    /// Kills every group this case started that still holds one of its
    /// marked processes, then every marked process. A group whose
    /// processes have all ended is left alone: its id may be another
    /// program's group by now (ids come round again within a minute on a
    /// busy machine with `pid_max` 32768), and killing it would kill
    /// another case's, or another program's, processes.
    pub fn kill_all(&self) {
        let groups = std::mem::take(&mut *self.groups.lock().unwrap_or_else(|p| p.into_inner()));
        let marked = marked_groups(&self.marker);
        for group in groups.into_iter().filter(|g| marked.contains(g)) {
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

/// Set once an interrupt has begun to kill every case's processes.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether an interrupt is killing every case's processes: a case that
/// ends now ended because of it, and its verdict means nothing.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Kills the processes of every case still running (on Ctrl-C).
pub fn kill_every_case() {
    INTERRUPTED.store(true, Ordering::SeqCst);
    let live: Vec<String> = markers().keys().cloned().collect();
    for marker in live {
        sweep(&marker);
    }
}

/// SIGKILLs every process whose environment holds `MARKER=marker`, until
/// none is left (a process may fork while we look).
fn sweep(marker: &str) {
    for _ in 0..20 {
        let marked = marked_processes(marker);
        for pid in &marked {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        if marked.is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The live processes (but this one) whose environment holds
/// `MARKER=marker`. A zombie keeps its environ only while it runs, so one
/// whose environ can be read is alive.
fn marked_processes(marker: &str) -> Vec<i32> {
    let needle = format!("{MARKER}={marker}").into_bytes();
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|environ| environ.split(|b| *b == 0).any(|var| var == needle.as_slice()))
        })
        .collect()
}

/// The process groups that hold a live process marked `marker`.
fn marked_groups(marker: &str) -> std::collections::BTreeSet<i32> {
    marked_processes(marker).into_iter().filter_map(group_of).collect()
}

/// A process's group, from /proc/PID/stat: the fifth field, counted after
/// the command's name (which may hold spaces and parentheses).
fn group_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(2)?.parse().ok()
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

    /// Sends `signal` to the process's whole group, while the process has
    /// not been reaped: once it has, its id may be another group's.
    pub fn signal_group(&mut self, signal: Signal) {
        if let Ok(None) = self.child.try_wait() {
            let _ = killpg(Pid::from_raw(self.pid), signal);
        }
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

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    fn alive(pid: i32) -> bool {
        std::fs::read(format!("/proc/{pid}/environ")).is_ok()
    }

    /// A group of the case's is killed whole, with a process in it that
    /// dropped the marker; a group that holds no marked process is not
    /// the case's, whatever its id.
    #[test]
    fn kill_all_kills_the_groups_that_hold_a_marked_process_and_no_other() {
        let marker = format!("process-test-{}", std::process::id());
        let procs = Procs::new(marker.clone());
        let script = format!("env -u {MARKER} sleep 30 & echo $!; wait");
        let mut leader = procs
            .spawn(Command::new("sh").args(["-c", &script]).stdout(std::process::Stdio::piped()))
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(leader.child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let unmarked_member: i32 = line.trim().parse().unwrap();
        let mut stranger = Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
        let stranger_pid = stranger.id() as i32;
        // As if a group the case started long ago had ended, and its id
        // had come round to the stranger's group.
        procs.groups.lock().unwrap().push(stranger_pid);

        assert_eq!(group_of(unmarked_member), Some(leader.pid()));
        let groups = marked_groups(&marker);
        assert!(groups.contains(&leader.pid()), "{groups:?}");
        assert!(!groups.contains(&stranger_pid), "{groups:?}");

        procs.kill_all();
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(unmarked_member) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive(unmarked_member), "the unmarked member of the case's group outlived kill_all");
        assert_eq!(stranger.try_wait().unwrap(), None, "kill_all killed a group that was not the case's");
        let _ = stranger.kill();
        let _ = stranger.wait();
        let _ = leader.child.wait();
    }
}
