//! Building blocks of the scrape-time collectors (`hot.rs` here, and the
//! admin endpoint's `admin::topology`): metric families described once,
//! samples built per scrape, without the prometheus crate's label lookups.

use std::collections::HashMap;

use prometheus::core::Desc;
use prometheus::proto::{self, MetricType};

/// The `replica`/`backend` label of replica `i` of a group.
pub fn replica_name(i: usize) -> String {
    format!("replica{i}")
}

/// One metric family a scrape-time collector exports (also `hot.rs`).
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: MetricType,
    pub labels: &'static [&'static str],
}

pub const fn family(
    name: &'static str,
    help: &'static str,
    kind: MetricType,
    labels: &'static [&'static str],
) -> Family {
    Family {
        name,
        help,
        kind,
        labels,
    }
}

pub fn labels(names: &[&str], values: &[&str]) -> Vec<proto::LabelPair> {
    names
        .iter()
        .zip(values)
        .map(|(n, v)| {
            let mut l = proto::LabelPair::default();
            l.set_name((*n).to_owned());
            l.set_value((*v).to_owned());
            l
        })
        .collect()
}

/// Samples of one family being built.
pub struct Samples {
    family: &'static Family,
    metrics: Vec<proto::Metric>,
}

/// One empty [`Samples`] for each of `families`, in their order.
pub fn samples(families: &'static [Family]) -> Vec<Samples> {
    families
        .iter()
        .map(|family| Samples {
            family,
            metrics: Vec::new(),
        })
        .collect()
}

impl Samples {
    pub fn gauge(&mut self, values: &[&str], v: f64) {
        let mut g = proto::Gauge::default();
        g.set_value(v);
        let mut m = proto::Metric::from_gauge(g);
        m.set_label(labels(self.family.labels, values));
        self.metrics.push(m);
    }

    pub fn counter(&mut self, values: &[&str], v: f64) {
        let mut c = proto::Counter::default();
        c.set_value(v);
        let mut m = proto::Metric::from_label(labels(self.family.labels, values));
        m.set_counter(c);
        self.metrics.push(m);
    }

    pub fn histogram(&mut self, values: &[&str], h: proto::Histogram) {
        let mut m = proto::Metric::from_label(labels(self.family.labels, values));
        m.set_histogram(h);
        self.metrics.push(m);
    }
}
/// The descriptions of `families`, for `Collector::desc`.
pub fn descs(families: &[Family]) -> Vec<Desc> {
    families
        .iter()
        .filter_map(|f| {
            Desc::new(
                f.name.to_owned(),
                f.help.to_owned(),
                f.labels.iter().map(|l| (*l).to_owned()).collect(),
                HashMap::new(),
            )
            .ok()
        })
        .collect()
}

/// The families with samples, for `Collector::collect`.
pub fn finish(samples: Vec<Samples>) -> Vec<proto::MetricFamily> {
    samples
        .into_iter()
        .filter(|s| !s.metrics.is_empty())
        .map(|s| {
            let mut mf = proto::MetricFamily::default();
            mf.set_name(s.family.name.to_owned());
            mf.set_help(s.family.help.to_owned());
            mf.set_field_type(s.family.kind);
            mf.set_metric(s.metrics);
            mf
        })
        .collect()
}
