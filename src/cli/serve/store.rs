//! The file behind the server: a few connections, each step on a blocking
//! thread. Every call into the library is here, so that a change to its
//! signatures (leases as `Duration`, say) is a change to this file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::{Claim, Failed, Job, JobId, ListFilter, NewJob, OpenOptions, QueueStats, Retry, State, Ukue};

/// Idle connections kept for the next step; more are opened under load.
const IDLE: usize = 8;

#[derive(Clone)]
pub struct Store(Arc<Inner>);

struct Inner {
    path: PathBuf,
    options: OpenOptions,
    keep_done: bool,
    idle: Mutex<Vec<Ukue>>,
    /// Woken when this server makes a job due (add, release, retry...).
    due: tokio::sync::Notify,
}

impl Store {
    pub fn new(path: &Path, options: OpenOptions, keep_done: bool) -> Store {
        Store(Arc::new(Inner {
            path: path.to_path_buf(),
            options,
            keep_done,
            idle: Mutex::new(Vec::new()),
            due: tokio::sync::Notify::new(),
        }))
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

    /// A future that ends when this server next makes a job due; create it
    /// before looking, so that a job added meanwhile is not missed.
    pub fn due(&self) -> tokio::sync::futures::Notified<'_> {
        self.0.due.notified()
    }

    fn wake(&self) {
        self.0.due.notify_waiters();
    }

    pub async fn add(&self, job: NewJob) -> crate::Result<JobId> {
        let id = self.with(move |f| f.add(&job)).await?;
        self.wake();
        Ok(id)
    }

    /// Claims the next due job. The claim runs to its end even when the
    /// request that asked for it is gone; a job claimed for a caller that
    /// no longer listens is given back at once, not left to its lease.
    pub async fn claim(&self, queue: String, lease: Duration) -> crate::Result<Claim> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let store = self.clone();
        tokio::spawn(async move {
            let result = store.with(move |f| f.claim_next(&queue, lease)).await;
            if let Err(Ok(Claim::Job(job))) = tx.send(result) {
                let _ = store.release(job.id, job.token).await;
            }
        });
        rx.await
            .unwrap_or_else(|_| Err(crate::Error::Corrupt("the claim's task ended without an answer".into())))
    }

    pub async fn ack(&self, id: JobId, token: String) -> crate::Result<()> {
        let keep_done = self.0.keep_done;
        self.with(move |f| f.finish(id, &token, keep_done)).await
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
        let failed = self.with(move |f| f.fail(id, &token, &error, retry)).await?;
        if let Failed::Ready { .. } = failed {
            self.wake();
        }
        Ok(failed)
    }

    /// Returns the new lease_until.
    pub async fn extend(&self, id: JobId, token: String, lease: Duration) -> crate::Result<i64> {
        self.with(move |f| f.renew(id, &token, lease)).await
    }

    pub async fn release(&self, id: JobId, token: String) -> crate::Result<()> {
        self.with(move |f| f.release(id, &token)).await?;
        self.wake();
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
        self.with(move |f| f.delete(id)).await
    }

    pub async fn retry(&self, id: JobId) -> crate::Result<()> {
        self.with(move |f| f.retry(id)).await?;
        self.wake();
        Ok(())
    }

    pub async fn retry_all(&self, queue: Option<String>) -> crate::Result<usize> {
        let n = self.with(move |f| f.retry_all(queue.as_deref())).await?;
        self.wake();
        Ok(n)
    }

    pub async fn purge(&self, state: State, queue: Option<String>) -> crate::Result<usize> {
        self.with(move |f| f.purge(state, queue.as_deref())).await
    }
}

/// How a failed attempt comes back: the library's `Retry` with a duration.
pub enum FailRetry {
    Backoff,
    After(Duration),
    Never,
}
