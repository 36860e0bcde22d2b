//! `[quick]`: what `dualperf run --quick` changes of a plan: fewer repetitions, shorter
//! runs, another sweep (`factors`), and, for plans of `[[points]]`, which of them run:
//!
//! ```toml
//! [quick]
//! repetitions = 1
//! duration = "4s"
//! where = { flows = [1, 8] }   # only the points whose factors take one of these values
//! ```

use serde::Deserialize;
use toml::Spanned;
use traffic::units::parse_duration;
use wire::time::Duration;

use super::point::key_line;
use super::{line_at, PlanError, PlanFile, Point};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct QuickFile {
    #[serde(default)]
    pub(super) repetitions: Option<Spanned<u32>>,
    #[serde(default)]
    pub(super) duration: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) factors: Option<Spanned<toml::Table>>,
    /// `where = { factor = value or [values] }`: the points kept.
    #[serde(default, rename = "where")]
    select: Option<Spanned<toml::Table>>,
}

/// `repetitions` and `duration`, `[quick]`'s when it gives them.
pub(super) fn lengths(
    text: &str,
    file: &PlanFile,
    quick_file: Option<&QuickFile>,
) -> Result<(u32, Duration), PlanError> {
    let repetitions = quick_file
        .and_then(|q| q.repetitions.as_ref())
        .or(file.repetitions.as_ref());
    let repetitions = match repetitions {
        None => 1,
        Some(r) if *r.get_ref() == 0 => {
            return Err(PlanError::at(
                line_at(text, r.span().start),
                "repetitions must be at least 1",
            ))
        }
        Some(r) => *r.get_ref(),
    };
    let duration_text = quick_file
        .and_then(|q| q.duration.as_ref())
        .unwrap_or(&file.duration);
    let duration = parse_duration(duration_text.get_ref())
        .ok()
        .filter(|d| *d > Duration::ZERO)
        .ok_or_else(|| {
            PlanError::at(
                line_at(text, duration_text.span().start),
                format!(
                    "duration '{}' is not a length above 0 (e.g. 10s, 500ms)",
                    duration_text.get_ref()
                ),
            )
        })?;
    Ok((repetitions, duration))
}

/// The points `[quick]`'s `where` keeps (each factor it names takes one of its values),
/// or all of them without one; none kept is a mistake.
pub(super) fn selected(
    text: &str,
    quick: Option<&QuickFile>,
    points: Vec<Point>,
) -> Result<Vec<Point>, PlanError> {
    let Some(select) = quick.and_then(|q| q.select.as_ref()) else {
        return Ok(points);
    };
    let line = line_at(text, select.span().start);
    let mut wanted = Vec::new();
    for (key, value) in select.get_ref() {
        let at = key_line(text, select.span(), key).or(line);
        let values = match value {
            toml::Value::Array(a) => a.iter().collect(),
            v => vec![v],
        };
        let values = values
            .into_iter()
            .map(|v| match v {
                toml::Value::String(s) => Ok(s.clone()),
                toml::Value::Integer(i) => Ok(i.to_string()),
                toml::Value::Float(f) => Ok(f.to_string()),
                toml::Value::Boolean(b) => Ok(b.to_string()),
                _ => Err(PlanError::at(
                    at,
                    format!("[quick] where: {key} takes a value or a list of values"),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        wanted.push((key.clone(), values));
    }
    let kept: Vec<Point> = points
        .into_iter()
        .filter(|p| {
            wanted
                .iter()
                .all(|(k, vs)| p.factors.get(k).is_some_and(|f| vs.contains(f)))
        })
        .collect();
    if kept.is_empty() {
        return Err(PlanError::at(
            line,
            "[quick] where: no point has factors with these values",
        ));
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use crate::plan::Plan;

    const PLAN: &str = r#"version = 1
name = "q"
duration = "20s"
repetitions = 3

[[points]]
label = "1 flow"
factors = { flows = 1, key = "flow-label" }

[[points]]
label = "8 flows"
factors = { flows = 8, key = "flow-label" }

[[points]]
label = "16 flows"
factors = { flows = 16, key = "5-tuple" }

[quick]
repetitions = 1
duration = "4s"
where = { flows = [1, 16] }
"#;

    #[test]
    fn quick_where_keeps_the_points_whose_factors_take_its_values() {
        let full = Plan::parse(PLAN, false).unwrap();
        assert_eq!(full.points.len(), 3);
        assert_eq!(full.runs.len(), 3 * 3 * 2);
        let quick = Plan::parse(PLAN, true).unwrap();
        let ids: Vec<&str> = quick.points.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["1 flow", "16 flows"]);
        assert_eq!(quick.runs.len(), 2 * 2);
        assert_eq!(quick.duration.as_nanos(), 4_000_000_000);
        // A single value, and two factors together.
        let one = PLAN.replace("where = { flows = [1, 16] }", "where = { flows = 8 }");
        assert_eq!(Plan::parse(&one, true).unwrap().points.len(), 1);
        let two = PLAN.replace(
            "where = { flows = [1, 16] }",
            "where = { flows = [1, 16], key = \"5-tuple\" }",
        );
        let p = Plan::parse(&two, true).unwrap();
        assert_eq!(p.points[0].id, "16 flows");
    }

    #[test]
    fn quick_where_that_keeps_nothing_is_placed_on_its_line() {
        let none = PLAN.replace("where = { flows = [1, 16] }", "where = { flows = [2] }");
        let e = Plan::parse(&none, true).unwrap_err();
        assert_eq!(e.line, Some(21), "{e}");
        assert!(e.message.contains("no point has factors"), "{e}");
        // The full plan does not read it.
        assert!(Plan::parse(&none, false).is_ok());
        let bad = PLAN.replace("where = { flows = [1, 16] }", "where = { flows = [[1]] }");
        let e = Plan::parse(&bad, true).unwrap_err();
        assert!(e.message.contains("takes a value or a list"), "{e}");
    }
}
