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
pub struct Samples(pub Vec<proto::Metric>);

impl Samples {
    pub fn gauge(&mut self, f: &Family, values: &[&str], v: f64) {
        let mut g = proto::Gauge::default();
        g.set_value(v);
        let mut m = proto::Metric::from_gauge(g);
        m.set_label(labels(f.labels, values));
        self.0.push(m);
    }

    pub fn counter(&mut self, f: &Family, values: &[&str], v: f64) {
        let mut c = proto::Counter::default();
        c.set_value(v);
        let mut m = proto::Metric::from_label(labels(f.labels, values));
        m.set_counter(c);
        self.0.push(m);
    }

    pub fn histogram(&mut self, f: &Family, values: &[&str], h: proto::Histogram) {
        let mut m = proto::Metric::from_label(labels(f.labels, values));
        m.set_histogram(h);
        self.0.push(m);
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
pub fn finish(families: &[Family], samples: Vec<Samples>) -> Vec<proto::MetricFamily> {
    families
        .iter()
        .zip(samples)
        .filter(|(_, samples)| !samples.0.is_empty())
        .map(|(fam, samples)| {
            let mut mf = proto::MetricFamily::default();
            mf.set_name(fam.name.to_owned());
            mf.set_help(fam.help.to_owned());
            mf.set_field_type(fam.kind);
            mf.set_metric(samples.0);
            mf
        })
        .collect()
}
