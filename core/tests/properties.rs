//! Property tests over everything that takes outside input: arbitrary bytes
//! as a fetched payload, arbitrary JSON as a job to push, arbitrary strings
//! as settings and periodic entries. Nothing panics; a payload that is not
//! a runnable job is wrapped with its bytes kept exactly.

use base64::Engine as _;
use cogworker::{Config, Job, Periodic, QueueSpec};
use proptest::prelude::*;
use serde_json::Value;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".*".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The bytes an unparseable wrapper kept.
fn kept_bytes(wrapper: &Job) -> Vec<u8> {
    match wrapper.str_field("raw_payload_base64") {
        Some(encoded) => base64::engine::general_purpose::STANDARD.decode(encoded).unwrap(),
        None => wrapper.str_field("raw_payload").unwrap().as_bytes().to_vec(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_bytes_parse_or_are_wrapped_with_their_bytes_kept(raw in prop::collection::vec(any::<u8>(), 0..512)) {
        match Job::parse(&raw) {
            Ok(job) => {
                // A runnable job re-serializes to JSON that parses the same.
                let again = Job::parse(job.to_json().as_bytes()).unwrap();
                prop_assert_eq!(again, job);
            }
            Err(reason) => {
                let wrapper = Job::unparseable(&raw, "default", &reason);
                prop_assert_eq!(kept_bytes(&wrapper), raw);
                // The wrapper itself is a valid job, so it can be listed and buried.
                prop_assert!(Job::parse(wrapper.to_json().as_bytes()).is_ok());
            }
        }
    }

    #[test]
    fn json_shaped_garbage_is_kept_too(value in json_value()) {
        let raw = serde_json::to_vec(&value).unwrap();
        if let Err(reason) = Job::parse(&raw) {
            let wrapper = Job::unparseable(&raw, "q", &reason);
            prop_assert_eq!(kept_bytes(&wrapper), raw);
        }
    }

    #[test]
    fn any_json_pushed_is_valid_or_refused_naming_a_field(value in json_value()) {
        match Job::from_value(value) {
            Ok(job) => {
                prop_assert!(!job.class().trim().is_empty());
                prop_assert!(Job::parse(job.to_json().as_bytes()).is_ok());
            }
            Err(cogworker::Error::InvalidJob { field, .. }) => prop_assert!(!field.is_empty()),
            Err(other) => prop_assert!(false, "unexpected error kind: {other}"),
        }
    }

    #[test]
    fn any_number_in_a_numeric_field_runs_within_bounds_or_is_buried_naming_it(
        field in prop::sample::select(&["timeout", "unique_for", "result_ttl", "expires_at", "expires_in", "retry",
                                        "retry_count", "at", "priority", "over_limit", "created_at"][..]),
        value in prop_oneof![
            any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            Just(serde_json::from_str::<Value>("1e300").unwrap()),
            Just(serde_json::from_str::<Value>("-1e300").unwrap()),
            Just(serde_json::from_str::<Value>("100000000000000000000000000000").unwrap()),
            ".{0,8}".prop_map(Value::String),
        ],
    ) {
        let mut payload = serde_json::json!({"class": "A", "args": [], "jid": "j1"});
        payload[field] = value.clone();
        let raw = payload.to_string();
        match Job::parse(raw.as_bytes()) {
            Ok(job) => {
                let longest = cogworker::LONGEST_SECS;
                prop_assert!(job.timeout_secs().is_none_or(|t| t > 0.0 && t <= longest), "{raw}");
                prop_assert!(job.result_ttl_secs().is_none_or(|t| t as f64 <= longest), "{raw}");
                prop_assert!(job.unique_for_secs().is_none_or(|t| t <= longest), "{raw}");
                let _ = (job.retry_policy(), job.retry_count(), job.priority_level(), job.over_limit_count());
            }
            Err(reason) => prop_assert!(reason.contains(&format!("`{field}`")), "{raw}: {reason}"),
        }
        // At push, the same value is taken or refused naming its field.
        if let Err(refused) = Job::from_value(payload) {
            prop_assert!(refused.to_string().contains(field), "{raw}: {refused}");
        }
    }

    #[test]
    fn args_survive_the_round_trip_exactly(args in prop::collection::vec(json_value(), 0..6)) {
        let job = Job::new("A").args(args.clone());
        let again = Job::parse(job.to_json().as_bytes()).unwrap();
        prop_assert_eq!(again.args_slice(), &args[..]);
    }

    #[test]
    fn settings_take_any_text_without_panicking(text in ".*", number in any::<f64>(), int in any::<i64>()) {
        let mut config = Config::default();
        let _ = config.set_redis_url(&text);
        let _ = config.set_namespace(&text);
        let _ = config.set_queues(&[text.as_str()]);
        let _ = config.set_queues_strict(&[text.as_str()]);
        let _ = QueueSpec::parse(&text);
        let _ = config.set_concurrency(int);
        let _ = config.set_orphan_threshold(number);
        let _ = config.set_shutdown_timeout(number);
        let _ = config.set_unique_lock_ttl(number);
        let _ = text.parse::<cogworker::CatchUp>();
        // A refused value names its setting.
        if let Err(e) = config.set_fetch_idle_max_interval(number) {
            prop_assert!(e.to_string().contains("fetch_idle_max_interval"));
        }
    }

    #[test]
    fn periodic_entries_take_any_text_without_panicking(cron in ".{0,40}", tz in ".{0,20}", json in ".{0,80}") {
        if let Ok(entry) = Periodic::new(&cron, "A") {
            let _ = entry.pjid();
            let _ = entry.time_zone(&tz);
        }
        let _ = Periodic::from_json(&json);
    }

    #[test]
    fn cron_fields_with_seconds_parse_or_name_the_expression(
        fields in prop::collection::vec(prop_oneof![Just("*".to_string()), "[0-9]{1,2}", "\\*/[0-9]{1,2}", "[0-9]-[0-9]{1,2}"], 5..=6)
    ) {
        let cron = fields.join(" ");
        if let Err(e) = Periodic::new(&cron, "A") {
            prop_assert!(e.to_string().contains("periodic.cron"));
        }
    }
}
