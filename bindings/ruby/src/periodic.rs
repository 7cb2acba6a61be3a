//! `Native::Periodic.new(cron, class_name, options, declared)`: a periodic entry
//! built and checked by the core from Ruby values (errors name the field).

use crate::convert;
use crate::errors::to_ruby;
use cogworker::host::periodic_entry;
use cogworker::Periodic;
use magnus::{Error, RHash, Ruby, Value};

#[magnus::wrap(class = "Cogworker::Native::Periodic", free_immediately, size)]
pub struct RbPeriodic(pub Periodic);

impl RbPeriodic {
    /// The entry pushing `class_name` on every slot of `cron`; options
    /// `args`, `queue`, `unique`, `tz`, `retry` (nil: not given), and the
    /// handler's `declared` push options, of which the core takes what an
    /// entry takes.
    pub fn new(ruby: &Ruby, cron: String, class_name: String, options: RHash, declared: RHash) -> Result<Self, Error> {
        let pairs = |hash: RHash| {
            let mut named = Vec::new();
            convert::each_option(ruby, hash, |name, value| {
                named.push((name.to_string(), value));
                Ok(())
            })?;
            Ok::<_, Error>(named)
        };
        periodic_entry(&cron, &class_name, &pairs(options)?, &pairs(declared)?)
            .map(RbPeriodic)
            .map_err(|e| to_ruby(ruby, e))
    }

    /// The entry's id (the same for the same entry in any language).
    pub fn pjid(&self) -> String {
        self.0.pjid()
    }

    /// The entry as registered: 'cron', 'class', 'args', 'queue', and 'tz',
    /// 'unique', 'retry' when given.
    pub fn entry(ruby: &Ruby, rb_self: &Self) -> Value {
        convert::from_json(ruby, &rb_self.0.describe())
    }
}
