//! The file behind the server: one thread that runs the steps that write,
//! one after another, a few connections for the steps that only read, each
//! on a blocking thread, and the claims waiting on each queue ([`Waiting`]). Every call
//! into the library is here, so that a change to its signatures (leases
//! as `Duration`, say) is a change to this file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use crate::{Claim, Failed, Job, JobId, ListFilter, NewJob, OpenOptions, QueueStats, Retry, State, Ukue};

/// Idle connections kept for the next step; more are opened under load.
const IDLE: usize = 8;

#[derive(Clone)]
pub struct Store(Arc<Inner>);

/// A step for the writer thread, on its connection (opened when first needed).
type WriteStep = Box<dyn FnOnce(&mut Option<Ukue>) + Send>;
/// What a step gave, or the panic it ended in.
type Outcome<T> = std::thread::Result<crate::Result<T>>;

struct Inner {
    path: PathBuf,
    options: OpenOptions,
    keep_done: bool,
    idle: Mutex<Vec<Ukue>>,
    /// The steps that write, for the writer thread ([`Store::write`]).
    writes: std::sync::mpsc::Sender<WriteStep>,
    /// The claims waiting on each queue that has some.
    waiting: Mutex<HashMap<String, Arc<Waiters>>>,
}

/// How often a queue's waiting claims, between them, look at the file for
/// jobs that other programs added; jobs this server makes due wake one of
/// them at once.
pub const POLL: Duration = Duration::from_millis(250);

/// The claims waiting on one queue. They share their looks at the file:
/// one whose timer runs out looks only when no look is under way and none
/// found the queue empty in the last half [`POLL`], so that a thousand
/// waiting claims look about as often as one (the published server's
/// each claim a transaction every 250 ms, and its cores busy).
#[derive(Default)]
pub struct Waiters {
    /// Woken (one waiter) when this server makes a job of the queue due.
    due: tokio::sync::Notify,
    looks: Mutex<Looks>,
}

#[derive(Default)]
struct Looks {
    under_way: bool,
    /// When the latest look that found nothing started.
    empty_at: Option<Instant>,
}

/// A look at the file by one waiting claim ([`Waiters::look`]).
pub struct Look<'a> {
    waiters: &'a Waiters,
    /// It holds the queue's turn (its timer ran out).
    turn: bool,
    started: Instant,
}

impl Waiters {
    fn looks(&self) -> MutexGuard<'_, Looks> {
        self.looks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A future that ends when this server makes a job of the queue due;
    /// create it (and enable it) before looking, so that a job added
    /// meanwhile is not missed.
    pub fn due(&self) -> tokio::sync::futures::Notified<'_> {
        self.due.notified()
    }

    /// Whether to look now: always for a claim that just came or was
    /// woken; for one whose timer ran out, only when it is the queue's turn.
    pub fn look(&self, woken: bool) -> Option<Look<'_>> {
        let started = Instant::now();
        if woken {
            return Some(Look { waiters: self, turn: false, started });
        }
        let mut looks = self.looks();
        let recent = looks.empty_at.is_some_and(|at| started.duration_since(at) < POLL / 2);
        if looks.under_way || recent {
            return None;
        }
        looks.under_way = true;
        Some(Look { waiters: self, turn: true, started })
    }
}

impl Look<'_> {
    /// What the look found: a job passes the turn on at once (there may be
    /// more), nothing tells the others not to look for a while.
    pub fn found(self, job: bool) {
        if job {
            self.waiters.due.notify_one();
        } else {
            let mut looks = self.waiters.looks();
            looks.empty_at = Some(looks.empty_at.map_or(self.started, |at| at.max(self.started)));
        }
    }
}

impl Drop for Look<'_> {
    fn drop(&mut self) {
        if self.turn {
            self.waiters.looks().under_way = false;
        }
    }
}

/// A claim waiting on a queue: its queue's [`Waiters`], left when dropped.
pub struct Waiting {
    store: Store,
    queue: String,
    pub waiters: Arc<Waiters>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut waiting = self.store.0.waiting.lock().unwrap_or_else(|e| e.into_inner());
        // The map's and this one: the last waiter of the queue leaves.
        if Arc::strong_count(&self.waiters) == 2 {
            waiting.remove(&self.queue);
        }
    }
}

impl Store {
    pub fn new(path: &Path, options: OpenOptions, keep_done: bool) -> Store {
        let (writes, steps) = std::sync::mpsc::channel::<WriteStep>();
        // Ends when the store does (the sender is dropped).
        std::thread::Builder::new()
            .name("ukue-serve-writer".into())
            .spawn(move || {
                let mut file = None;
                for step in steps {
                    step(&mut file);
                }
            })
            .expect("the writer thread starts");
        Store(Arc::new(Inner {
            path: path.to_path_buf(),
            options,
            keep_done,
            idle: Mutex::new(Vec::new()),
            writes,
            waiting: Mutex::new(HashMap::new()),
        }))
    }

    /// Runs `step`, which writes, on the writer thread, after the steps
    /// that write before it. SQLite lets one writer in at a time anyway,
    /// and one that finds the file busy sleeps a millisecond before it
    /// tries again (src/busy.rs), through the moment the writer before it
    /// commits; on one thread the next step starts as soon as the last
    /// ends, with no hand-off between threads in between (ukue-bench,
    /// `http_add_4c`). Other programs still meet it at SQLite's lock.
    async fn write<T: Send + 'static>(
        &self,
        step: impl FnOnce(&mut Ukue) -> crate::Result<T> + Send + 'static,
    ) -> crate::Result<T> {
        let (tx, rx) = tokio::sync::oneshot::channel::<Outcome<T>>();
        let inner = self.0.clone();
        let run: WriteStep = Box::new(move |file: &mut Option<Ukue>| {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if file.is_none() {
                    *file = Some(inner.options.clone().open(&inner.path)?);
                }
                step(file.as_mut().expect("opened above"))
            }));
            let _ = tx.send(outcome);
        });
        if self.0.writes.send(run).is_err() {
            return Err(crate::Error::Corrupt("the server's writer thread has ended".into()));
        }
        match rx.await {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(crate::Error::Corrupt("the server's writer thread has ended".into())),
        }
    }

    /// Runs `step` on a connection, on a blocking thread.
    async fn with<T: Send + 'static>(
        &self,
        step: impl FnOnce(&mut Ukue) -> crate::Result<T> + Send + 'static,
    ) -> crate::Result<T> {
        let inner = self.0.clone();
        let run = tokio::task::spawn_blocking(move || {
            let pooled = inner.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let mut file = match pooled {
                Some(file) => file,
                None => inner.options.clone().open(&inner.path)?,
            };
            let result = step(&mut file);
            let mut idle = inner.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < IDLE {
                idle.push(file);
            }
            result
        });
        match run.await {
            Ok(result) => result,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }

    /// The time of the file's clock (a job's `run_at` is in it).
    pub fn now_ms(&self) -> i64 {
        self.0.options.clock.now_ms()
    }

    /// Joins the claims waiting on `queue`.
    pub fn wait_on(&self, queue: &str) -> Waiting {
        let mut waiting = self.0.waiting.lock().unwrap_or_else(|e| e.into_inner());
        let waiters = waiting.entry(queue.to_string()).or_default().clone();
        Waiting { store: self.clone(), queue: queue.to_string(), waiters }
    }

    /// A job of `queue` (None: of a queue not known here) became due: one
    /// waiting claim of the queue (of each queue) is woken.
    fn wake_one(&self, queue: Option<&str>) {
        let waiting = self.0.waiting.lock().unwrap_or_else(|e| e.into_inner());
        match queue {
            Some(queue) => waiting.get(queue).into_iter().for_each(|w| w.due.notify_one()),
            None => waiting.values().for_each(|w| w.due.notify_one()),
        }
    }

    /// Many jobs became due: every waiting claim of `queue` (or of all) is woken.
    fn wake_all(&self, queue: Option<&str>) {
        let waiting = self.0.waiting.lock().unwrap_or_else(|e| e.into_inner());
        for (_, w) in waiting.iter().filter(|(q, _)| queue.is_none_or(|queue| queue == q.as_str())) {
            w.due.notify_waiters();
        }
    }

    pub async fn add(&self, job: NewJob) -> crate::Result<JobId> {
        let queue = job.queue.clone();
        let id = self.write(move |f| f.add(&job)).await?;
        self.wake_one(Some(&queue));
        Ok(id)
    }

    /// Claims the next due job. The claim runs to its end even when the
    /// request that asked for it is gone; a job claimed for a caller that
    /// no longer listens is given back at once, not left to its lease.
    pub async fn claim(&self, queue: String, lease: Duration) -> crate::Result<Claim> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let store = self.clone();
        tokio::spawn(async move {
            let result = store.write(move |f| f.claim_next(&queue, lease)).await;
            if let Err(Ok(Claim::Job(job))) = tx.send(result) {
                let _ = store.release(job.id, job.token).await;
            }
        });
        rx.await
            .unwrap_or_else(|_| Err(crate::Error::Corrupt("the claim's task ended without an answer".into())))
    }

    pub async fn ack(&self, id: JobId, token: String) -> crate::Result<()> {
        let keep_done = self.0.keep_done;
        self.write(move |f| f.finish(id, &token, keep_done)).await
    }

    pub async fn fail(
        &self,
        id: JobId,
        token: String,
        error: String,
        retry: FailRetry,
    ) -> crate::Result<Failed> {
        let retry = match retry {
            FailRetry::Backoff => Retry::Backoff,
            FailRetry::After(d) => Retry::After(d),
            FailRetry::Never => Retry::Never,
        };
        let failed = self.write(move |f| f.fail(id, &token, &error, retry)).await?;
        if let Failed::Ready { .. } = failed {
            self.wake_one(None);
        }
        Ok(failed)
    }

    /// Returns the new lease_until.
    pub async fn extend(&self, id: JobId, token: String, lease: Duration) -> crate::Result<i64> {
        self.write(move |f| f.renew(id, &token, lease)).await
    }

    pub async fn release(&self, id: JobId, token: String) -> crate::Result<()> {
        self.write(move |f| f.release(id, &token)).await?;
        self.wake_one(None);
        Ok(())
    }

    pub async fn get(&self, id: JobId) -> crate::Result<Option<Job>> {
        self.with(move |f| f.get(id)).await
    }

    pub async fn list(&self, filter: ListFilter) -> crate::Result<Vec<Job>> {
        self.with(move |f| f.list(&filter)).await
    }

    pub async fn stats(&self) -> crate::Result<Vec<QueueStats>> {
        self.with(|f| f.stats()).await
    }

    pub async fn delete(&self, id: JobId) -> crate::Result<()> {
        self.write(move |f| f.delete(id)).await
    }

    pub async fn retry(&self, id: JobId) -> crate::Result<()> {
        self.write(move |f| f.retry(id)).await?;
        self.wake_one(None);
        Ok(())
    }

    pub async fn retry_all(&self, queue: Option<String>) -> crate::Result<usize> {
        let woken = queue.clone();
        let n = self.write(move |f| f.retry_all(queue.as_deref())).await?;
        self.wake_all(woken.as_deref());
        Ok(n)
    }

    pub async fn purge(&self, state: State, queue: Option<String>) -> crate::Result<usize> {
        self.write(move |f| f.purge(state, queue.as_deref())).await
    }
}

/// How a failed attempt comes back: the library's `Retry` with a duration.
pub enum FailRetry {
    Backoff,
    After(Duration),
    Never,
}
