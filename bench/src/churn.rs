//! Session churn: sessions opened, then closed, round after round, with the server's RSS read
//! after each step; what an open idle session costs, and whether its memory comes back once it
//! is closed (`reactor-bench sessions`).

use std::time::Duration;

use anyhow::{Result, bail};
use hyper::Method;

use crate::{
    client::{self, Connection, Endpoint},
    process,
};

/// Connections the sessions are opened and closed over.
const CONNECTIONS: usize = 4;

/// How a round's sessions end.
#[derive(Debug, Clone, Copy)]
pub enum Close {
    /// The client ends each (`DELETE`).
    Delete,
    /// The client walks away; the server is given this long to close them (its idle timeout
    /// and a margin).
    Abandon(Duration),
}

/// One round's RSS readings, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Round {
    /// With the round's sessions open.
    pub open: u64,
    /// After they were closed.
    pub closed: u64,
}

/// The RSS before the first round, and each round's readings.
#[derive(Debug, Clone)]
pub struct Churn {
    /// Before any session of this run.
    pub before: u64,
    /// Each round, in order.
    pub rounds: Vec<Round>,
}

/// Opens `sessions` sessions at `endpoint` (`initialize` and `notifications/initialized`) and
/// ends them as `close` says, `rounds` times, reading the RSS of process `pid` after each step
/// once it has had `settle` to settle.
pub async fn run(
    endpoint: &Endpoint,
    pid: u32,
    sessions: usize,
    rounds: usize,
    close: Close,
    settle: Duration,
) -> Result<Churn> {
    let before = process::rss_bytes(pid)?;
    let mut readings = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let ids = open(endpoint, sessions).await?;
        tokio::time::sleep(settle).await;
        let open = process::rss_bytes(pid)?;
        match close {
            Close::Delete => delete(endpoint, ids).await?,
            Close::Abandon(wait) => tokio::time::sleep(wait).await,
        }
        tokio::time::sleep(settle).await;
        let closed = process::rss_bytes(pid)?;
        readings.push(Round { open, closed });
    }
    Ok(Churn {
        before,
        rounds: readings,
    })
}

/// Ends the sessions `ids` (`DELETE`) over [`CONNECTIONS`] connections.
async fn delete(endpoint: &Endpoint, ids: Vec<String>) -> Result<()> {
    let mut chunks: Vec<Vec<String>> = vec![Vec::new(); CONNECTIONS];
    for (i, id) in ids.into_iter().enumerate() {
        chunks[i % CONNECTIONS].push(id);
    }
    let tasks: Vec<_> = chunks
        .into_iter()
        .map(|ids| {
            let endpoint = endpoint.clone();
            tokio::spawn(async move {
                let mut connection = Connection::open(&endpoint).await?;
                for id in ids {
                    let reply = connection
                        .send(Method::DELETE, None, Some(&id), None)
                        .await?;
                    if !reply.status.is_success() {
                        bail!("DELETE of session {id}: HTTP {}", reply.status);
                    }
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// Opens `total` sessions over [`CONNECTIONS`] connections at once, which are then closed (the
/// sessions stay: they are the server's); their ids.
pub async fn open(endpoint: &Endpoint, total: usize) -> Result<Vec<String>> {
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|i| {
            let endpoint = endpoint.clone();
            let count = total / CONNECTIONS + usize::from(i < total % CONNECTIONS);
            tokio::spawn(async move {
                let mut connection = Connection::open(&endpoint).await?;
                let mut ids = Vec::with_capacity(count);
                for _ in 0..count {
                    ids.push(client::initialize(&mut connection).await?);
                }
                anyhow::Ok(ids)
            })
        })
        .collect();
    let mut ids = Vec::with_capacity(total);
    for task in tasks {
        ids.extend(task.await??);
    }
    Ok(ids)
}
