//! The ops API's reads of the per-class execution metrics (`Api`'s
//! `class_metrics`, `class_metrics_series`, `metric_totals`); what is
//! counted and how it is written is `crate::metrics`.

use super::Api;
use crate::error::Result;
use crate::metrics::{split_field, ClassMetrics, MinuteMetrics, TotalMetrics, MINUTE_TTL_SECS};
use redis::AsyncCommands;
use std::collections::{BTreeMap, HashMap};

impl Api {
    fn current_minute() -> u64 {
        (crate::job::now() / 60.0).floor() as u64
    }

    async fn minute_hashes(&self, minutes: u64) -> Result<Vec<(u64, HashMap<String, i64>)>> {
        let last = Self::current_minute();
        let first = last.saturating_sub(minutes.clamp(1, MINUTE_TTL_SECS / 60) - 1);
        let keys = self.keys();
        let mut pipe = redis::pipe();
        for minute in first..=last {
            pipe.hgetall(keys.metrics_minute(minute));
        }
        let hashes: Vec<HashMap<String, i64>> = pipe.query_async(&mut self.conn()).await?;
        Ok((first..=last).zip(hashes).collect())
    }

    /// Every class that ran in the last `minutes` minutes, the one with the
    /// most run time first.
    pub async fn class_metrics(&self, minutes: u64) -> Result<Vec<ClassMetrics>> {
        let mut classes: HashMap<String, ClassMetrics> = HashMap::new();
        for (_, fields) in self.minute_hashes(minutes).await? {
            for (key, value) in fields {
                if let Some((class, field)) = split_field(&key) {
                    classes
                        .entry(class.to_string())
                        .or_insert_with(|| ClassMetrics::new(class))
                        .add(field, value);
                }
            }
        }
        let mut ranked: Vec<ClassMetrics> = classes.into_values().collect();
        ranked.sort_by(|a, b| b.total_secs.total_cmp(&a.total_secs).then(a.class.cmp(&b.class)));
        Ok(ranked)
    }

    /// One class over the last `minutes` minutes: its totals and each
    /// minute's processed and failed (oldest first, empty minutes included).
    pub async fn class_metrics_series(&self, class: &str, minutes: u64) -> Result<(ClassMetrics, Vec<MinuteMetrics>)> {
        let mut total = ClassMetrics::new(class);
        let mut series = Vec::new();
        for (minute, fields) in self.minute_hashes(minutes).await? {
            let mut this = ClassMetrics::new(class);
            for (key, value) in fields {
                if let Some((_, field)) = split_field(&key).filter(|(name, _)| *name == class) {
                    this.add(field, value);
                    total.add(field, value);
                }
            }
            series.push(MinuteMetrics {
                at: minute * 60,
                processed: this.processed,
                failed: this.failed,
            });
        }
        Ok((total, series))
    }

    /// The all-time counters, by queue and class.
    pub async fn metric_totals(&self) -> Result<Vec<TotalMetrics>> {
        let fields: HashMap<String, i64> = self.conn().hgetall(self.keys().metrics_total()).await?;
        let mut totals: BTreeMap<(String, String), ClassMetrics> = BTreeMap::new();
        for (key, value) in fields {
            let Some((name, field)) = split_field(&key) else {
                continue;
            };
            let Some((queue, class)) = name.split_once('|') else {
                continue;
            };
            totals
                .entry((queue.to_string(), class.to_string()))
                .or_insert_with(|| ClassMetrics::new(class))
                .add(field, value);
        }
        Ok(totals
            .into_iter()
            .map(|((queue, _), metrics)| TotalMetrics { queue, metrics })
            .collect())
    }
}
