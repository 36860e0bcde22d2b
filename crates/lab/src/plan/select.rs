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
    /// The target to set (`lab:PATH`), if any.
    pub target: Option<String>,
}

impl Selection {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.factors.is_empty() && self.leave_out_groups.is_empty() && self.target.is_none()
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
}
