//! `Cogworker::Native::Api`: every ops-API call by name (the core's table),
//! and the admin commands. Results leave as Ruby values (Hashes with
//! String keys, Arrays, ...), as `JSON.parse` would make them.

use crate::blocking::{finish, run};
use crate::config::RbConfig;
use crate::convert;
use crate::errors::to_ruby;
use cogworker::host::{admin, api_calls as calls, Session};
use cogworker::Api;
use magnus::{Error, RArray, Ruby};
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
