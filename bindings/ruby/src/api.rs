//! `Cogworker::Native::Api`: every ops-API call by name (the core's table),
//! and the admin commands. Results leave as Ruby values (Hashes with
//! String keys, Arrays, ...), as `JSON.parse` would make them.

use crate::blocking::{finish, run};
use crate::config::RbConfig;
use crate::convert;
use crate::errors::to_ruby;
use cogworker::host::{admin, api_calls as calls, Session};
use cogworker::Api;
use magnus::{prelude::*, Error, RArray, Ruby};
use std::sync::Arc;

#[magnus::wrap(class = "Cogworker::Native::Api", free_immediately, size)]
pub struct RbApi(Arc<Session>);

impl RbApi {
    pub fn new(config: &RbConfig) -> Self {
        RbApi(Arc::new(Session::new(config.config())))
    }

    /// The ops API on `client`'s session: its configuration and its
    /// connection (no connection of its own).
    pub fn of_client(client: &crate::client::RbClient) -> Self {
        RbApi(client.0.clone())
    }

    fn api(&self, ruby: &Ruby) -> Result<Arc<Api>, Error> {
        self.0.api().map_err(|e| to_ruby(ruby, e))
    }

    /// Runs the API call `name` with positional `args`; its result.
    pub fn call(ruby: &Ruby, rb_self: &Self, name: String, args: RArray) -> Result<magnus::Value, Error> {
        let args = cogworker::host::HostValue::json_list(&convert::values(ruby, args), &name);
        let args = args.map_err(|e| to_ruby(ruby, e))?;
        let result = finish(ruby, |first| {
            rb_self
                .0
                .start_api(|api| async move { calls::call(&api, &name, args).await }, first)
        })?;
        Ok(convert::from_json(ruby, &result))
    }

    /// Follows job `jid` (docs/long-jobs.md): subscribed when this returns.
    pub fn watch(ruby: &Ruby, rb_self: &Self, jid: String) -> Result<RbWatch, Error> {
        let api = rb_self.api(ruby)?;
        let watch = run(
            ruby,
            rb_self.0.naming_redis(cogworker::host::HostWatch::start(api, jid)),
        )?;
        Ok(RbWatch(watch))
    }

    /// Runs an admin command; the text to print.
    pub fn admin(ruby: &Ruby, rb_self: &Self, command: String, arg: Option<String>) -> Result<String, Error> {
        let api = rb_self.api(ruby)?;
        run(
            ruby,
            rb_self
                .0
                .naming_redis(async move { admin::run(&api, &command, arg.as_deref()).await }),
        )
    }
}

/// A job being followed: `next(timeout)` gives `[kind, value]` events.
#[magnus::wrap(class = "Cogworker::Native::Watch", free_immediately, size)]
pub struct RbWatch(cogworker::host::HostWatch);

impl RbWatch {
    /// The next event, `["progress", report]` or `["finished", end]`,
    /// waiting up to `timeout` seconds (nil: until it comes); nil once the
    /// end was given or the timeout passed.
    pub fn next(ruby: &Ruby, rb_self: &Self, timeout: Option<f64>) -> Result<magnus::Value, Error> {
        let timeout = timeout.map(|t| std::time::Duration::from_secs_f64(t.clamp(0.0, 1e9)));
        let event = run(ruby, rb_self.0.clone().next(timeout))?;
        Ok(match event {
            Some((kind, value)) => ruby
                .ary_new_from_values(&[ruby.str_new(kind).as_value(), convert::from_json(ruby, &value)])
                .as_value(),
            None => ruby.qnil().as_value(),
        })
    }
}

/// `[name, params, help]` of every API call.
pub fn api_calls() -> Vec<(&'static str, Vec<&'static str>, &'static str)> {
    calls::CALLS
        .iter()
        .map(|c| (c.name, c.params.to_vec(), c.help))
        .collect()
}

/// `[name, argument or nil, help]` of every admin command.
pub fn admin_commands() -> Vec<(&'static str, Option<&'static str>, &'static str)> {
    admin::COMMANDS.iter().map(|c| (c.name, c.arg, c.help)).collect()
}
