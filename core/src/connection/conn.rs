//! `Conn`: one handle type for every kind of connection the core talks
//! through (the shared auto-reconnecting one, a dedicated one for blocking
//! commands, a cluster connection, one a calling thread drives, one a task
//! drives), so every command, script and MULTI is written once.

use super::on_task::OnTask;
use super::ThreadConn;
use redis::aio::{ConnectionLike, ConnectionManager, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

#[derive(Clone)]
pub enum Conn {
    Manager(ConnectionManager),
    Plain(MultiplexedConnection),
    Cluster(ClusterConnection),
    OnThread(ThreadConn),
    /// A task's own, reserved for one push (`on_task.rs`).
    OnTask(OnTask),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Manager(c) => c.req_packed_command(cmd),
            Conn::Plain(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
            Conn::OnThread(c) => c.req_packed_command(cmd),
            Conn::OnTask(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Manager(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Plain(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::OnThread(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::OnTask(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Manager(c) => c.get_db(),
            Conn::Plain(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
            Conn::OnThread(c) => c.get_db(),
            Conn::OnTask(c) => c.get_db(),
        }
    }
}
