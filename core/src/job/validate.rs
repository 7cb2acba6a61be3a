//! The checks a job to push passes, each error naming its field.

use super::{
    check_limiter_name, check_nesting, float, new_jid, numbers, unique_digest, valid_jid, Job, CLASS_MAX_LEN, JID_RULE,
    LIMITS_MAX,
};
use crate::error::{Error, Result};
use serde_json::Value;

impl Job {
    /// Checks every known field a pusher may set; the error names the field.
    pub fn validate(&mut self) -> Result<()> {
        let bad = |field: &str, value: &Value, reason: &str| Error::invalid_value(field, value, reason);
        match self.fields.get("class") {
            Some(Value::String(c)) if !c.trim().is_empty() && c.chars().count() <= CLASS_MAX_LEN => {}
            Some(Value::String(c)) if !c.trim().is_empty() => {
                return Err(Error::invalid_job(
                    "class",
                    format!("must be at most {CLASS_MAX_LEN} characters, not {}", c.chars().count()),
                ))
            }
            Some(v) => return Err(bad("class", v, "must be a non-empty string")),
            None => return Err(Error::invalid_job("class", "is required")),
        }
        match self.fields.get("args") {
            None => {
                self.fields_mut().insert("args".into(), Value::Array(Vec::new()));
            }
            Some(Value::Array(args)) => {
                check_nesting(args).map_err(|(field, reason)| Error::invalid_job(field, reason))?
            }
            Some(v) => return Err(bad("args", v, "must be an array")),
        }
        match self.fields.get("queue") {
            None => {
                self.fields_mut()
                    .insert("queue".into(), Value::String("default".into()));
            }
            Some(Value::String(q)) => {
                crate::config::validate_queue_name(q).map_err(|reason| bad("queue", &self.fields["queue"], reason))?
            }
            Some(v) => return Err(bad("queue", v, "must be a string")),
        }
        if !self.fields.contains_key("retry") {
            self.fields_mut().insert("retry".into(), Value::Bool(true));
        }
        match self.fields.get("jid") {
            None => {}
            Some(Value::String(j)) if valid_jid(j) => {}
            Some(v) => return Err(bad("jid", v, JID_RULE)),
        }
        numbers::check_for_push(&self.fields).map_err(|(field, value, reason)| bad(field, value, reason))?;
        match self.fields.get("bid") {
            None => {}
            Some(Value::String(b)) if valid_jid(b) => {}
            Some(v) => return Err(bad("bid", v, JID_RULE)),
        }
        match self.fields.get("group") {
            None => {}
            Some(Value::String(group)) if crate::job::valid_group(group) => {}
            Some(v) => return Err(bad("group", v, crate::job::GROUP_RULE)),
        }
        match self.fields.get("key") {
            None => {}
            Some(Value::String(key)) if crate::job::valid_group(key) => {}
            Some(v) => return Err(bad("key", v, crate::job::GROUP_RULE)),
        }
        match self.fields.get("group_backlog_full") {
            None => {}
            Some(Value::String(full)) if full == "refuse" || full == "drop_oldest" => {}
            Some(v) => {
                return Err(Error::invalid_value(
                    "group_backlog_full",
                    v,
                    "must be \"refuse\" or \"drop_oldest\"",
                ))
            }
        }
        if self.fields.contains_key("group_backlog_full") && !self.fields.contains_key("group_backlog") {
            return Err(Error::invalid_job(
                "group_backlog_full",
                "says what a push past group_backlog does: give group_backlog too",
            ));
        }
        match self.fields.get("group_rate_kind") {
            None => {}
            Some(Value::String(kind)) if crate::job::RATE_KINDS.contains(&kind.as_str()) => {}
            Some(v) => return Err(bad("group_rate_kind", v, crate::job::RATE_KIND_RULE)),
        }
        if self.fields.contains_key("group_rate_kind") && !self.fields.contains_key("group_rate") {
            return Err(Error::invalid_job(
                "group_rate_kind",
                "says how group_rate counts: give group_rate too",
            ));
        }
        if self.fields.contains_key("group_rate_period") && !self.fields.contains_key("group_rate") {
            return Err(Error::invalid_job(
                "group_rate_period",
                "is the period of group_rate: give group_rate too",
            ));
        }
        self.check_flow()?;
        if let Some(cursor) = self.fields.get("cursor") {
            if let Some(reason) = super::cursor_rule_broken(cursor) {
                return Err(Error::invalid_job("cursor", reason));
            }
        }
        match self.fields.get("keep_expired") {
            None | Some(Value::Bool(_)) => {}
            Some(v) => return Err(bad("keep_expired", v, "must be true or false")),
        }
        match self.fields.get("limits") {
            None => {}
            Some(Value::Array(names)) if !names.is_empty() && names.len() <= LIMITS_MAX => {
                for (i, name) in names.iter().enumerate() {
                    let field = format!("limits[{i}]");
                    match name {
                        Value::String(text) => check_limiter_name(text).map_err(|reason| bad(&field, name, reason))?,
                        other => return Err(bad(&field, other, "must be a limiter's name")),
                    }
                    // A job holding a place of a limiter waits for itself
                    // when it asks that limiter again: it would never run.
                    if names[..i].contains(name) {
                        return Err(bad(&field, name, "names a limiter listed before it"));
                    }
                }
            }
            Some(v) => return Err(bad("limits", v, "must be a list of 1 to 8 limiter names")),
        }
        Ok(())
    }

    /// A debounced or throttled job's options go together (see
    /// [`crate::flow`]): a key, one policy, no time of its own (its key's
    /// window times it), no unique lock, no batch (a push that collapses
    /// into another job or is dropped is not one of the batch's) and no
    /// kept result yet; a longest wait no shorter than the window; and a
    /// throttle's excess is delayed or dropped.
    fn check_flow(&self) -> Result<()> {
        let has = |field: &str| self.fields.contains_key(field);
        self.check_sequence()?;
        match self.fields.get("replace") {
            None | Some(Value::Bool(_)) => {}
            Some(v) => return Err(Error::invalid_value("replace", v, "must be true or false")),
        }
        match self.fields.get("throttle_excess") {
            None => {}
            Some(Value::String(excess)) if excess == "delay" || excess == "drop" => {}
            Some(v) => {
                return Err(Error::invalid_value(
                    "throttle_excess",
                    v,
                    "must be \"delay\" or \"drop\"",
                ))
            }
        }
        for (field, needs) in [("debounce_max", "debounce"), ("throttle_excess", "throttle")] {
            if has(field) && !has(needs) {
                return Err(Error::invalid_job(
                    field,
                    format!("goes with {needs}: give {needs} too"),
                ));
            }
        }
        let policies: Vec<&str> = ["debounce", "throttle", "replace"]
            .into_iter()
            .filter(|policy| match *policy {
                "replace" => self.replaces(),
                policy => has(policy),
            })
            .collect();
        let policy = match policies.as_slice() {
            [] => return Ok(()),
            [one] => *one,
            [_, second, ..] => {
                return Err(Error::invalid_job(
                    second,
                    format!("a job has one flow policy, not {}", policies.join(" and ")),
                ))
            }
        };
        if !has("key") {
            return Err(Error::invalid_job(
                "key",
                format!("is required with {policy}: it applies to the pushes of one key"),
            ));
        }
        if policy == "debounce" && has("group_backlog") {
            return Err(Error::invalid_job(
                "group_backlog",
                "with debounce, its job waits in the schedule, one per key: give no group_backlog",
            ));
        }
        for (field, why) in [
            ("at", "its key's window times the job: give no at or delay"),
            (
                "unique_for",
                "its key's window keeps its pushes apart already: give no unique_for",
            ),
            (
                "bid",
                "a push that collapses into another job or is dropped cannot join a batch",
            ),
        ] {
            if has(field) {
                return Err(Error::invalid_job(field, format!("with {policy}, {why}")));
            }
        }
        if let Some((window, Some(longest))) = self.debounce_secs() {
            if longest < window {
                return Err(Error::invalid_value(
                    "debounce_max",
                    &self.fields["debounce_max"],
                    "must be no shorter than the debounce window",
                ));
            }
        }
        Ok(())
    }

    /// A sequence's options go together: its key is its group (given as
    /// `key`, or as `group` alone, or both the same), one job at a time
    /// (a `group_cap` of 1 if any), and no flow policy besides.
    fn check_sequence(&self) -> Result<()> {
        match self.fields.get("sequence") {
            None | Some(Value::Bool(false)) => return Ok(()),
            Some(Value::Bool(true)) => {}
            Some(v) => return Err(Error::invalid_value("sequence", v, "must be true or false")),
        }
        let (key, group) = (self.fields.get("key"), self.fields.get("group"));
        match (key, group) {
            (None, None) => {
                return Err(Error::invalid_job(
                    "key",
                    "is required with sequence: the jobs of one key run one at a time, in push order",
                ))
            }
            (Some(key), Some(group)) if key != group => {
                return Err(Error::invalid_job(
                    "group",
                    "a sequence's group is its key: give one of them, or both the same",
                ))
            }
            _ => {}
        }
        if let Some(cap) = self.fields.get("group_cap").filter(|cap| cap.as_u64() != Some(1)) {
            return Err(Error::invalid_value(
                "group_cap",
                cap,
                "a sequence runs one job at a time: 1",
            ));
        }
        for field in ["debounce", "throttle", "unique_for"] {
            if self.fields.contains_key(field) {
                return Err(Error::invalid_job(field, "a sequence has no other flow policy"));
            }
        }
        if self.replaces() {
            return Err(Error::invalid_job("replace", "a sequence has no other flow policy"));
        }
        Ok(())
    }

    /// Fills what a push adds: `jid`, `created_at`. Validates first.
    pub(crate) fn prepare_for_push(&mut self, now: f64) -> Result<()> {
        self.validate()?;
        if matches!(self.fields.get("sequence"), Some(Value::Bool(true))) {
            // One at a time per key: the key is the group, capped at 1.
            let key = self.fields.get("key").or(self.fields.get("group")).cloned();
            if let Some(key) = key {
                self.fields_mut().insert("group".into(), key.clone());
                self.fields_mut().insert("key".into(), key);
            }
            self.fields_mut().insert("group_cap".into(), Value::from(1));
        }
        if !self.fields.contains_key("jid") {
            self.fields_mut().insert("jid".into(), Value::String(new_jid()));
        }
        if !self.fields.contains_key("created_at") {
            self.fields_mut().insert("created_at".into(), float(now));
        }
        // Counted from the push, on the fleet's clock (`now`).
        if let Some(ttl) = self.fields_mut().remove("expires_in").and_then(|t| t.as_f64()) {
            let at = self.expiry().map_or(now + ttl, |at| at.min(now + ttl));
            self.fields_mut().insert("expires_at".into(), float(at));
        }
        if self.unique_for_secs().is_some() {
            // With a key, one job per key (a singleton), whatever its args.
            let digest = self
                .flow_digest()
                .unwrap_or_else(|| unique_digest(self.class(), self.queue_name(), self.args_slice()));
            self.fields_mut().insert("unique_digest".into(), Value::String(digest));
        }
        Ok(())
    }
}
