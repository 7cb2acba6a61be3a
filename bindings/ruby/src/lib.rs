//! `cogworker/cogworker_ext`: the native extension under the `cogworker`
//! gem. It converts types and errors and waits without the GVL; the mixin,
//! the CLI and the testing modes are Ruby (`ruby/lib/`), the job logic is
//! the core.

mod api;
mod client;
mod config;
mod errors;
mod nogvl;
mod web;
mod worker;

use magnus::{function, method, prelude::*, Error, Ruby};

#[magnus::init(name = "cogworker_ext")]
fn init(ruby: &Ruby) -> Result<(), Error> {
    let cogworker = ruby.define_module("Cogworker")?;
    let native = cogworker.define_module("Native")?;
    native.define_module_function("check_config", function!(config::check, 1))?;
    native.define_module_function("new_jid", function!(cogworker::new_jid, 0))?;
    native.define_module_function(
        "after_fork_in_child",
        function!(cogworker::runtime::after_fork_in_child, 0),
    )?;
    native.define_module_function("init_logging", function!(cogworker::logging::init, 1))?;
    native.define_module_function("periodic_id", function!(worker::periodic_id, 1))?;

    let client = native.define_class("Client", ruby.class_object())?;
    client.define_singleton_method("new", function!(client::RbClient::new, 1))?;
    client.define_method("push", method!(client::RbClient::push, 1))?;
    client.define_method("push_bulk", method!(client::RbClient::push_bulk, 1))?;

    let delivery = native.define_class("Delivery", ruby.class_object())?;
    delivery.define_method("class_name", method!(worker::RbDelivery::class_name, 0))?;
    delivery.define_method("jid", method!(worker::RbDelivery::jid, 0))?;
    delivery.define_method("queue", method!(worker::RbDelivery::queue, 0))?;
    delivery.define_method("retry_count", method!(worker::RbDelivery::retry_count, 0))?;
    delivery.define_method("args_json", method!(worker::RbDelivery::args_json, 0))?;

    let worker = native.define_class("Worker", ruby.class_object())?;
    worker.define_singleton_method("new", function!(worker::RbWorker::new, 3))?;
    worker.define_method("start", method!(worker::RbWorker::start, 0))?;
    worker.define_method("next_job", method!(worker::RbWorker::next_job, 1))?;
    worker.define_method("complete", method!(worker::RbWorker::complete, 1))?;
    worker.define_method("fail", method!(worker::RbWorker::fail, 5))?;
    worker.define_method("quiet", method!(worker::RbWorker::quiet, 0))?;
    worker.define_method("stop", method!(worker::RbWorker::stop, 0))?;
    worker.define_method("identity", method!(worker::RbWorker::identity, 0))?;
    worker.define_method("lifecycle", method!(worker::RbWorker::lifecycle, 0))?;
    worker.define_method("busy_json", method!(worker::RbWorker::busy_json, 0))?;
    worker.define_method("wait", method!(worker::RbWorker::wait, 1))?;

    let api = native.define_class("Api", ruby.class_object())?;
    api.define_singleton_method("new", function!(api::RbApi::new, 1))?;
    api.define_method("queues_json", method!(api::RbApi::queues_json, 0))?;
    api.define_method("pause_queue", method!(api::RbApi::pause_queue, 1))?;
    api.define_method("unpause_queue", method!(api::RbApi::unpause_queue, 1))?;
    api.define_method("clear_queue", method!(api::RbApi::clear_queue, 1))?;
    api.define_method("set_size", method!(api::RbApi::set_size, 1))?;
    api.define_method("set_page_json", method!(api::RbApi::set_page_json, 3))?;
    api.define_method("find_json", method!(api::RbApi::find_json, 2))?;
    api.define_method("retry_now", method!(api::RbApi::retry_now, 3))?;
    api.define_method("retry_all", method!(api::RbApi::retry_all, 1))?;
    api.define_method("delete", method!(api::RbApi::delete, 3))?;
    api.define_method("kill", method!(api::RbApi::kill, 3))?;
    api.define_method("processes_json", method!(api::RbApi::processes_json, 0))?;
    api.define_method("quiet_process", method!(api::RbApi::quiet_process, 1))?;
    api.define_method("stop_process", method!(api::RbApi::stop_process, 1))?;
    api.define_method("stats", method!(api::RbApi::stats, 1))?;
    api.define_method("attempts", method!(api::RbApi::attempts, 1))?;
    api.define_method("unique_locks_json", method!(api::RbApi::unique_locks_json, 1))?;
    api.define_method("clear_unique_lock", method!(api::RbApi::clear_unique_lock, 1))?;
    api.define_method("periodic_json", method!(api::RbApi::periodic_json, 0))?;
    api.define_method("clear_set", method!(api::RbApi::clear_set, 1))?;

    let web = native.define_class("WebServer", ruby.class_object())?;
    web.define_singleton_method("new", function!(web::RbWebServer::new, 4))?;
    web.define_method("url", method!(web::RbWebServer::url, 0))?;
    web.define_method("stop", method!(web::RbWebServer::stop, 0))?;
    web.define_method("wait", method!(web::RbWebServer::wait, 1))?;
    Ok(())
}
