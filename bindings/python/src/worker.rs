//! `Worker` and `Delivery`: the core's host worker. Python threads run the
//! core's slot loop (`run_slot`, the GIL released while waiting), which
//! calls the package's `perform` for each delivery and settles it once by
//! the core's rule; the events threads run the core's events loop. One
//! delivery collected unsettled is abandoned by the core.

use crate::blocking;
use crate::config::PyConfig;
use crate::convert;
use crate::errors::to_py;
use crate::periodic::PyPeriodic;
use cogworker::host::{Described, Ended, HostDelivery, HostFailure, HostWorker, SettledBy};
use pyo3::prelude::*;
use std::time::Duration;

#[pyclass(name = "Delivery", module = "cogworker._core")]
pub struct PyDelivery {
    delivery: HostDelivery,
    /// The job's `args` as a Python list, made when the slot takes it.
    args: Py<PyAny>,
}

impl PyDelivery {
    fn new(py: Python<'_>, delivery: HostDelivery) -> PyResult<Self> {
        let args = match delivery.with_args(|args| convert::list_to_py(py, args)) {
            Some(args) => args?.unbind(),
            None => pyo3::types::PyList::empty(py).into_any().unbind(),
        };
        Ok(PyDelivery { delivery, args })
    }
}

#[pymethods]
impl PyDelivery {
    /// `(class_name, jid, queue, retry_count, args)`.
    #[getter]
    fn info<'py>(&self, py: Python<'py>) -> (&str, &str, &str, u32, Bound<'py, PyAny>) {
        let info = &self.delivery.info;
        (
            &info.class,
            &info.jid,
            &info.queue,
            info.retry_count,
            self.args.bind(py).clone(),
        )
    }

    /// The whole job, a dict (every field, for middleware); None once
    /// settled.
    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.delivery
            .with_payload(|fields| convert::map_to_py(py, fields))
            .transpose()
    }

    /// `(name, attributes, carrier)` of the CONSUMER span around its
    /// handler (`carrier`: the trace context it carries); None once settled.
    #[getter]
    fn job_span<'py>(&self, py: Python<'py>) -> PyResult<Option<Span<'py>>> {
        self.delivery
            .job_span()
            .map(|(name, attributes, carrier)| {
                Ok((
                    name,
                    convert::map_to_py(py, &attributes)?,
                    convert::map_to_py(py, &carrier)?,
                ))
            })
            .transpose()
    }

    /// Was the job cancelled while it runs? (The handler may stop early;
    /// however it ends, the job is filed as cancelled.)
    #[getter]
    fn cancelled(&self) -> bool {
        self.delivery.is_cancelled()
    }

    /// Reports progress (docs/long-jobs.md): `percent` 0 to 100 or None,
    /// a short `message`, JSON-able `data`; coalesced by the core.
    #[pyo3(signature = (percent=None, message=None, data=None))]
    fn progress(&self, percent: Option<f64>, message: Option<&str>, data: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let data = data.map_or(cogworker::host::HostValue::Null, convert::value);
        self.delivery.progress(percent, message, &data).map_err(to_py)
    }

    /// Saves `cursor` (JSON data) as where the job resumes.
    fn checkpoint(&self, cursor: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delivery.checkpoint(&convert::value(cursor)).map_err(to_py)
    }

    /// The cursor the job resumes from (None on a first run).
    #[getter]
    fn cursor<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.delivery
            .cursor()
            .map(|cursor| convert::to_py(py, &cursor))
            .transpose()
    }

    /// Should the job stop now (shutdown, cancelled, near its time limit)?
    #[getter]
    fn stopping(&self) -> bool {
        self.delivery.is_stopping()
    }

    /// One item of an iteration is done: saves `cursor`; whether to go on.
    #[pyo3(signature = (cursor, max_runtime=None))]
    fn iterated(&self, cursor: &Bound<'_, PyAny>, max_runtime: Option<f64>) -> PyResult<bool> {
        self.delivery
            .iterated(&convert::value(cursor), max_runtime)
            .map_err(to_py)
    }

    /// Put the job back on its queue with its cursor when it returns.
    fn interrupt(&self) {
        self.delivery.interrupt();
    }

    /// Did its time limit pass? (The event loop cancels such a coroutine;
    /// however it ends, the job fails as timed out.)
    #[getter]
    fn timed_out(&self) -> bool {
        self.delivery.is_timed_out()
    }

    /// It goes on as a coroutine on the host's event loop: its thread slot
    /// is freed for another job at once.
    fn detach(&self) {
        self.delivery.detach();
    }

    /// The handler ended without an outcome (`how` says how); nothing once
    /// settled.
    fn abandon(&self, how: &str) {
        self.delivery.abandon(how);
    }
}

#[pyclass(name = "Worker", module = "cogworker._core")]
pub struct PyWorker(HostWorker);

#[pymethods]
impl PyWorker {
    /// `handlers`: the class names registered in Python (the only ones that
    /// run); `periodic`: the entries (`periodic_entry`).
    /// `client_middleware`: run the periodic jobs this worker pushes through
    /// the host's client middleware (``client_middleware`` events).
    #[new]
    #[pyo3(signature = (config, handlers, periodic, client_middleware=false))]
    fn new(
        config: &PyConfig,
        handlers: Vec<String>,
        periodic: Vec<PyRef<'_, PyPeriodic>>,
        client_middleware: bool,
    ) -> PyResult<Self> {
        let periodic: Vec<_> = periodic.iter().map(|entry| entry.0.clone()).collect();
        HostWorker::new(config.inner.clone(), &handlers, &periodic, client_middleware)
            .map(PyWorker)
            .map_err(to_py)
    }

    /// Starts the engine in the background; returns at once.
    fn start(&self) -> PyResult<()> {
        self.0.start().map_err(to_py)
    }

    /// Runs this thread as one of the worker's slots until it stops:
    /// `perform(delivery)` runs the job's handler and returns its value (or
    /// raises); `describe(delivery, error)` runs the error handlers and
    /// says what to record: `(error_class, message, backtrace, retry_in,
    /// stops_worker)`. The core settles each delivery once.
    fn run_slot(&self, py: Python<'_>, perform: &Bound<'_, PyAny>, describe: &Bound<'_, PyAny>) -> PyResult<()> {
        // This thread, as the timekeeper names it (see `run_timekeeper`).
        // SAFETY: PyThread_get_thread_ident has no preconditions.
        let thread = unsafe { pyo3::ffi::PyThread_get_thread_ident() };
        self.0.run_slot(&mut blocking::Blocking(py), |delivery| {
            let delivery = Bound::new(py, PyDelivery::new(py, delivery)?)?;
            let performing = delivery.borrow();
            let ended = match performing
                .delivery
                .perform(thread as u64, || perform.call1((&delivery,)))
            {
                Ok(value) => Ended::Returned(value),
                Err(error) => Ended::Raised(error),
            };
            if performing.delivery.is_timed_out() {
                // The timeout told may not have been raised yet (the
                // handler returned first): it must not reach the next job.
                // SAFETY: with the GIL held; NULL clears this thread's
                // pending asynchronous exception.
                unsafe { pyo3::ffi::PyThreadState_SetAsyncExc(thread as _, std::ptr::null_mut()) };
            }
            drop(performing);
            settle(py, &self.0, SettledBy::Slot, &delivery, ended, describe);
            Ok(())
        })
    }

    /// Settles `delivery` by how its handler (a coroutine, on the event
    /// loop) ended: it returned `outcome`, or raised it; as `run_slot` does.
    fn settle(
        &self,
        py: Python<'_>,
        delivery: &Bound<'_, PyDelivery>,
        returned: bool,
        outcome: Bound<'_, PyAny>,
        describe: &Bound<'_, PyAny>,
    ) {
        let ended = if returned {
            Ended::Returned(outcome)
        } else {
            Ended::Raised(PyErr::from_value(outcome))
        };
        settle(py, &self.0, SettledBy::EventLoop, delivery, ended, describe);
    }

    /// Runs this thread as the worker's timekeeper until the engine has
    /// shut down: when a job's time limit passes while its plain handler
    /// runs, `JobTimeout` is raised in that handler's thread (when it next
    /// runs Python code: a blocking call in C is not interrupted). In a
    /// child of `-p N`, `retry_hook(class_name, retry_count)` is asked
    /// first what the job's retry hook says of a timeout (a hook that
    /// raises counts as the default, and is reported as unraisable).
    fn run_timekeeper(&self, py: Python<'_>, retry_hook: &Bound<'_, PyAny>) -> PyResult<()> {
        let timeout = py.get_type::<crate::errors::JobTimeout>();
        let ask = |class: &str, retry_count: u32| {
            Ok(match retry_hook.call1((class, retry_count)) {
                Ok(said) => convert::retry_hint(&said),
                Err(error) => {
                    error.write_unraisable(py, Some(retry_hook));
                    cogworker::host::RetryHint::Default
                }
            })
        };
        self.0.run_timekeeper(&mut blocking::Blocking(py), ask, |thread| {
            // SAFETY: with the GIL held; the type is a live exception class
            // (borrowed: the call takes its own reference).
            unsafe { pyo3::ffi::PyThreadState_SetAsyncExc(thread as _, timeout.as_ptr()) };
            Ok(())
        })
    }

    /// Runs this thread as the worker's events thread until the engine has
    /// shut down and every event was handled: `dispatch(name, job)` runs
    /// the application's hooks for each (`job`: a dict for "death").
    /// A dispatch that raises is reported as unraisable.
    fn run_hooks(&self, py: Python<'_>, dispatch: &Bound<'_, PyAny>) -> PyResult<()> {
        self.0.run_hooks(&mut blocking::Blocking(py), |name, job| {
            let called = job
                .map(|job| convert::to_py(py, &job))
                .transpose()
                .and_then(|job| dispatch.call1((name, job)));
            if let Err(error) = called {
                error.write_unraisable(py, Some(dispatch));
            }
            Ok(())
        })
    }

    /// Runs this thread for the periodic jobs the worker pushes through the
    /// client middleware: `push(job)` returns the job to push, or None to
    /// push nothing; one that raises is pushed as it was.
    fn run_client_middleware(&self, py: Python<'_>, push: &Bound<'_, PyAny>) -> PyResult<()> {
        self.0.run_client_middleware(&mut blocking::Blocking(py), |job| {
            Ok(match convert::to_py(py, job).and_then(|dict| push.call1((dict,))) {
                Ok(pushed) if pushed.is_none() => Ok(None),
                Ok(pushed) => Ok(Some(convert::value(&pushed))),
                Err(error) => Err(crate::errors::describe(py, &error)),
            })
        })
    }

    /// After the engine's shutdown: waits (the GIL released) until the slot
    /// threads (unless `slots` is False) and events threads have left
    /// their loops, up to `timeout` seconds; whether every slot did.
    fn join(&self, py: Python<'_>, timeout: f64, slots: bool) -> bool {
        let timeout = Duration::from_secs_f64(timeout.clamp(0.0, 1e9));
        py.detach(|| self.0.join(timeout, slots))
    }

    /// Waits up to `timeout` seconds for the engine to finish its shutdown;
    /// True once it has. Raises if it ended with an error.
    fn wait(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let finished = blocking::wait(py, Some(timeout), |slice| self.0.finished(slice))?;
        Ok(finished.transpose().map_err(crate::errors::Error::new_err)?.is_some())
    }

    fn quiet(&self) {
        self.0.quiet();
    }

    fn stop(&self) {
        self.0.stop();
    }

    /// Running jobs shutdown put back on their queues (exit at once then).
    #[getter]
    fn given_back(&self) -> usize {
        self.0.given_back()
    }

    #[getter]
    fn identity(&self) -> &str {
        self.0.identity()
    }

    /// How many times a running job was told to stop, cancelled or past
    /// its time limit (a change: look at the running coroutines).
    #[getter]
    fn interruptions(&self) -> u64 {
        self.0.interruptions()
    }

    /// "running", "quiet" or "stopping".
    #[getter]
    fn lifecycle(&self) -> &'static str {
        self.0.lifecycle()
    }

    /// A slot thread (`thread`, by name) left its loop early: True, and a
    /// warning, when another should take its place (not while stopping).
    fn slot_ended_early(&self, thread: &str) -> bool {
        self.0.slot_ended_early(thread)
    }

    /// Logs the jobs running now (TTIN), in the engine's words.
    fn log_busy(&self) {
        self.0.log_busy();
    }

    /// Logs each thread's stack (TTIN), in the engine's words: `(name,
    /// is_main, stack)` of each.
    #[staticmethod]
    fn log_thread_stacks(threads: Vec<(String, bool, String)>) {
        HostWorker::log_thread_stacks(&threads);
    }

    /// A signal the worker command caught, by name; True: also log the
    /// threads' stacks (TTIN).
    fn signal(&self, name: &str) -> bool {
        self.0.signal(name)
    }

    /// After shutdown: join the slot threads? (Not when jobs were given back.)
    fn join_slots(&self) -> bool {
        self.0.join_slots()
    }

    /// After the joins: exit the process at once?
    fn exit_at_once(&self, all_joined: bool) -> bool {
        self.0.exit_at_once(all_joined)
    }

    fn busy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.0.busy())
    }
}

/// A span's name, attributes and carried trace context, as dicts.
type Span<'py> = (String, Bound<'py, PyAny>, Bound<'py, PyAny>);

/// The core's settle rule, with the package's `describe` for a failure
/// (one that raises is reported as unraisable: the delivery is abandoned).
fn settle(
    py: Python<'_>,
    worker: &HostWorker,
    by: SettledBy,
    delivery: &Bound<'_, PyDelivery>,
    ended: Ended<Bound<'_, PyAny>, PyErr>,
    describe: &Bound<'_, PyAny>,
) {
    let held = delivery.borrow();
    worker.settle(
        by,
        &held.delivery,
        ended,
        |value| convert::value(&value),
        to_py,
        |error: PyErr| {
            let described = describe.call1((delivery, error.value(py))).and_then(|d| {
                d.extract::<(
                    Bound<'_, PyAny>,
                    Bound<'_, PyAny>,
                    Bound<'_, PyAny>,
                    Bound<'_, PyAny>,
                    bool,
                )>()
            });
            match described {
                Ok((class, message, backtrace, retry, stops_worker)) => Some(Described {
                    failure: HostFailure::from_values(
                        convert::value(&class),
                        convert::value(&message),
                        convert::value(&backtrace),
                        convert::retry_hint(&retry),
                    ),
                    stops_worker,
                }),
                Err(error) => {
                    error.write_unraisable(py, Some(describe));
                    None
                }
            }
        },
    );
}
