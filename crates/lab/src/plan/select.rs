//! Changing a plan's text before it is parsed, as `dualperf compare`'s flags change its
//! battery: the sweep's factors replaced (in `[factors]` and in `[quick]`'s), the extra
//! points of some groups left out, the target set. The plan that runs is the text this
//! returns, kept in the run directory as `plan.toml`, so `dualperf run` of that file
//! measures the same.

use std::path::Path;

/// What to change in a plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    /// Factors to set in the sweep (and its quick variant), each with its values as
    /// TOML gives them: `size = [64, 1472]`, `protocol = ["udp"]`, `rate = ["1000pps"]`.
    pub factors: Vec<(String, toml::Value)>,
    /// Groups of extra points (`[[points]] group = "VoIP"`) to leave out.
    pub leave_out_groups: Vec<String>,
    /// The target to set (`lab:PATH`, `peer`), if any.
    pub target: Option<String>,
    /// Keys to set, each a dotted path from the top (`peer` a table, `quick.duration`).
    pub set: Vec<(String, toml::Value)>,
    /// Split every `[[tables]]` entry into one per value of this factor (its `where`
    /// holding the value, its title naming it): `("direction", [("forward", "here →
    /// receiver"), …])`.
    pub tables_by: Option<(String, Vec<(String, String)>)>,
}

impl Selection {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.factors.is_empty()
            && self.leave_out_groups.is_empty()
            && self.target.is_none()
            && self.set.is_empty()
            && self.tables_by.is_none()
    }

    /// `text` changed: unchanged (with its comments) when the selection is empty. A lab
    /// target relative to the plan (at `base`) is made absolute, since the plan's copy in
    /// a run directory is elsewhere. An error says why the text does not read.
    pub fn apply(&self, text: &str, base: Option<&Path>) -> Result<String, String> {
        if self.is_empty() {
            return Ok(text.to_owned());
        }
        let mut doc: toml::Table = toml::from_str(text).map_err(|e| e.message().to_owned())?;
        for (key, values) in &self.factors {
            if let Some(toml::Value::Table(f)) = doc.get_mut("factors") {
                f.insert(key.clone(), values.clone());
            }
            if let Some(toml::Value::Table(q)) = doc.get_mut("quick") {
                if let Some(toml::Value::Table(f)) = q.get_mut("factors") {
                    f.insert(key.clone(), values.clone());
                }
            }
        }
        if let Some(toml::Value::Array(points)) = doc.get_mut("points") {
            points.retain(|p| {
                let group = p.get("group").and_then(toml::Value::as_str);
                !group.is_some_and(|g| self.leave_out_groups.iter().any(|l| l == g))
            });
        }
        for (path, value) in &self.set {
            set_path(&mut doc, path, value.clone())?;
        }
        if let Some((factor, values)) = &self.tables_by {
            split_tables(&mut doc, factor, values);
        }
        match &self.target {
            Some(t) => {
                doc.insert("target".into(), toml::Value::String(t.clone()));
            }
            None => {
                let relative = match (doc.get("target"), base) {
                    (Some(toml::Value::String(t)), Some(base)) => t
                        .strip_prefix("lab:")
                        .filter(|f| Path::new(f).is_relative() && base.join(f).is_file())
                        .map(|f| base.join(f)),
                    _ => None,
                };
                if let Some(file) = relative {
                    let abs = std::path::absolute(&file).map_err(|e| e.to_string())?;
                    doc.insert(
                        "target".into(),
                        toml::Value::String(format!("lab:{}", abs.display())),
                    );
                }
            }
        }
        toml::to_string(&doc).map_err(|e| e.to_string())
    }
}

/// `value` at the dotted `path` of `doc`, tables made on the way.
fn set_path(doc: &mut toml::Table, path: &str, value: toml::Value) -> Result<(), String> {
    let mut parts: Vec<&str> = path.split('.').collect();
    let last = parts.pop().unwrap_or_default();
    let mut at = doc;
    for p in parts {
        let entry = at
            .entry(p.to_owned())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        at = entry
            .as_table_mut()
            .ok_or_else(|| format!("{p} is not a table"))?;
    }
    at.insert(last.to_owned(), value);
    Ok(())
}

/// Every `[[tables]]` entry once per value of `factor`, value by value: `where` holds
/// the value, and the title ends with its text.
fn split_tables(doc: &mut toml::Table, factor: &str, values: &[(String, String)]) {
    let Some(toml::Value::Array(tables)) = doc.get("tables") else {
        return;
    };
    let mut out = Vec::new();
    for (value, text) in values {
        for t in tables {
            let mut t = t.clone();
            if let Some(table) = t.as_table_mut() {
                let title = table
                    .get("title")
                    .and_then(toml::Value::as_str)
                    .unwrap_or("");
                let title = format!("{title}, {text}");
                table.insert("title".into(), toml::Value::String(title));
                let w = table
                    .entry("where")
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                if let Some(w) = w.as_table_mut() {
                    w.insert(factor.to_owned(), toml::Value::String(value.clone()));
                }
            }
            out.push(t);
        }
    }
    doc.insert("tables".into(), toml::Value::Array(out));
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = r#"# a comment
version = 1
name = "s"
duration = "1s"

[factors]
protocol = ["udp", "tcp"]
size = [64, 512]

[[points]]
label = "VoIP G.711.1"
group = "VoIP"
voip = "g711.1"

[[points]]
label = "Quake 3"
group = "Games"
app = "quake3"

[quick]
repetitions = 1
duration = "250ms"
factors = { protocol = ["udp", "tcp"], size = [64] }
"#;

    #[test]
    fn an_empty_selection_keeps_the_text_and_its_comments() {
        assert_eq!(Selection::default().apply(PLAN, None).unwrap(), PLAN);
    }

    #[test]
    fn factors_are_set_in_the_sweep_and_its_quick_variant_and_groups_left_out() {
        let s = Selection {
            factors: vec![(
                "size".into(),
                toml::Value::Array(vec![toml::Value::Integer(1472)]),
            )],
            leave_out_groups: vec!["Games".into()],
            target: Some("lab:topologies/two-hop.toml".into()),
            ..Selection::default()
        };
        let text = s.apply(PLAN, None).unwrap();
        let plan = crate::plan::Plan::parse(&text, false).unwrap();
        let ids: Vec<&str> = plan.points.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "protocol=udp,size=1472",
                "protocol=tcp,size=1472",
                "VoIP G.711.1"
            ]
        );
        assert_eq!(plan.target.to_string(), "lab:topologies/two-hop.toml");
        let quick = crate::plan::Plan::parse(&text, true).unwrap();
        assert_eq!(quick.points.len(), 3);
        assert!(
            quick.points[0].id.contains("size=1472"),
            "{:?}",
            quick.points[0]
        );
    }

    #[test]
    fn a_peer_selection_sets_the_far_end_and_splits_the_tables_by_direction() {
        let plan = format!("{PLAN}\n[[tables]]\ntitle = \"Loss\"\nmetrics = [\"loss\"]\n");
        let peer: toml::Table = toml::from_str(
            "v4 = \"198.18.4.2\"\nv6 = \"2001:2:0:4::2\"\nfar_end = \"agent\"\nname = \"receiver\"",
        )
        .unwrap();
        let s = Selection {
            factors: vec![(
                "direction".into(),
                toml::Value::Array(vec!["forward".into(), "reverse".into()]),
            )],
            target: Some("peer".into()),
            set: vec![
                ("peer".into(), toml::Value::Table(peer)),
                ("quick.duration".into(), "100ms".into()),
            ],
            tables_by: Some((
                "direction".into(),
                vec![
                    ("forward".into(), "here → receiver".into()),
                    ("reverse".into(), "receiver → here".into()),
                ],
            )),
            ..Selection::default()
        };
        let text = s.apply(&plan, None).unwrap();
        let p = crate::plan::Plan::parse(&text, true).unwrap();
        assert_eq!(p.duration, wire::time::Duration::from_millis(100));
        assert_eq!(
            p.peer
                .as_ref()
                .map(|p| (p.name.as_deref(), p.v4.to_string())),
            Some((Some("receiver"), "198.18.4.2".into()))
        );
        let titles: Vec<(&str, &str)> = p
            .tables
            .iter()
            .map(|t| (t.title.as_str(), t.select["direction"].as_str()))
            .collect();
        assert_eq!(
            titles,
            [
                ("Loss, here → receiver", "forward"),
                ("Loss, receiver → here", "reverse")
            ]
        );
        // quick: 2 protocols × 1 size × 2 directions + 2 extra points × 2 directions.
        assert_eq!(p.points.len(), 8);
    }
}
