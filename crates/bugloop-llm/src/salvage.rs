//! What can be kept of an answer the model's output limit cut off: the JSON up to the last
//! complete object or array, its open brackets closed, and the top-level fields the schema
//! requires and the cut lost given empty values. Each candidate is validated against the schema
//! like any answer, so a kept entry is a complete one; the caller says that the answer was cut.

use serde_json::Value;

/// Cut points tried, from the last one back: an answer's entries are rarely more.
const MAX_TRIES: usize = 200;

/// The longest valid answer `text` holds before it was cut, if any; with how many entries its
/// top-level arrays kept.
pub fn salvage(
    text: &str,
    validator: &jsonschema::Validator,
    schema: &Value,
) -> Option<(Value, usize)> {
    let start = text.find(['{', '['])?;
    let text = &text[start..];
    for (end, open) in cut_points(text).into_iter().rev().take(MAX_TRIES) {
        let mut candidate = text[..end].to_owned();
        candidate.extend(open.iter().rev().map(|bracket| match bracket {
            b'{' => '}',
            _ => ']',
        }));
        let Ok(value) = serde_json::from_str::<Value>(&candidate) else {
            continue;
        };
        // The schema's required fields filled, or those of one of its alternatives.
        let shapes = std::iter::once(schema).chain(alternatives(schema));
        for shape in shapes {
            let mut filled = value.clone();
            fill_required(&mut filled, shape);
            if validator.is_valid(&filled) {
                let kept = match &filled {
                    Value::Object(fields) => fields
                        .values()
                        .filter_map(Value::as_array)
                        .map(Vec::len)
                        .sum(),
                    Value::Array(items) => items.len(),
                    _ => 0,
                };
                return Some((filled, kept));
            }
        }
    }
    None
}

/// The alternatives of a schema that is one of several shapes (`anyOf`, `oneOf`).
fn alternatives(schema: &Value) -> impl Iterator<Item = &Value> {
    ["anyOf", "oneOf"]
        .into_iter()
        .filter_map(|key| schema.get(key).and_then(Value::as_array))
        .flatten()
}

/// Where a complete object or array ends (the byte after its closing bracket), and a nested
/// list the cut came right after (closed, it is empty: no entry of it was lost), with the
/// brackets still open there, outermost first.
fn cut_points(text: &str) -> Vec<(usize, Vec<u8>)> {
    let mut points = Vec::new();
    let mut open: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (at, byte) in text.bytes().enumerate() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            // A list the cut came right after: it held nothing yet, and closed it is empty.
            b'[' if !open.is_empty() && text[at + 1..].trim().is_empty() => {
                open.push(byte);
                points.push((at + 1, open.clone()));
            }
            b'{' | b'[' => open.push(byte),
            b'}' | b']' => {
                if open.pop().is_none() {
                    break;
                }
                if open.is_empty() {
                    // The whole answer closed: nothing was cut.
                    break;
                }
                points.push((at + 1, open.clone()));
            }
            _ => {}
        }
    }
    points
}

/// Gives each top-level field the schema requires and `value` lacks an empty value of its
/// type (the cut took it, such as a summary written after the findings).
fn fill_required(value: &mut Value, schema: &Value) {
    let (Value::Object(fields), Some(required)) =
        (value, schema.get("required").and_then(Value::as_array))
    else {
        return;
    };
    for name in required.iter().filter_map(Value::as_str) {
        if fields.contains_key(name) {
            continue;
        }
        let kind = schema
            .pointer(&format!("/properties/{name}/type"))
            .and_then(Value::as_str);
        let empty = match kind {
            Some("array") => Value::Array(Vec::new()),
            Some("string") => Value::String(String::new()),
            Some("object") => Value::Object(serde_json::Map::new()),
            Some("boolean") => Value::Bool(false),
            _ => continue,
        };
        fields.insert(name.to_owned(), empty);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "findings": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"file": {"type": "string"}, "line": {"type": "integer"}},
                    "required": ["file", "line"],
                }},
                "summary": {"type": "string"},
            },
            "required": ["findings", "summary"],
        })
    }

    fn kept(text: &str) -> Option<(Value, usize)> {
        let schema = schema();
        let validator = jsonschema::validator_for(&schema).unwrap();
        salvage(text, &validator, &schema)
    }

    #[test]
    fn a_cut_answer_keeps_its_complete_entries() {
        let cut = r#"{"findings": [{"file": "a.py", "line": 3}, {"file": "b.py", "line": 4}, {"file": "c.py", "li"#;
        let (value, count) = kept(cut).unwrap();
        assert_eq!(count, 2);
        assert_eq!(value["findings"][1]["file"], "b.py");
        assert_eq!(value["summary"], "");
    }

    #[test]
    fn braces_and_quotes_inside_strings_are_text() {
        let cut = r#"{"findings": [{"file": "a}\"]{.py", "line": 3}, {"file": "#;
        let (value, count) = kept(cut).unwrap();
        assert_eq!(count, 1);
        assert_eq!(value["findings"][0]["file"], "a}\"]{.py");
    }

    #[test]
    fn nothing_complete_or_an_incomplete_entry_is_not_kept() {
        assert!(kept(r#"{"findings": [{"file": "a.py", "#).is_none());
        assert!(kept("no json at all").is_none());
        // A complete object that the schema refuses (no line) is not an entry to keep; the one
        // before it is.
        let cut = r#"{"findings": [{"file": "a.py", "line": 1}, {"file": "b.py"}, {"fi"#;
        let (value, count) = kept(cut).unwrap();
        assert_eq!(count, 1);
        assert_eq!(value["findings"][0]["file"], "a.py");
    }

    #[test]
    fn a_list_cut_before_its_first_entry_is_closed_empty_in_the_shape_it_began() {
        let schema = json!({"anyOf": [
            {"type": "object", "properties": {
                "answer": {"enum": ["no bug"]}, "findings": {"type": "array", "maxItems": 0}},
             "required": ["answer", "findings"], "additionalProperties": false},
            {"type": "object", "properties": {
                "answer": {"enum": ["bug"]}, "findings": {"type": "array", "maxItems": 1,
                    "items": {"type": "object", "required": ["file"]}}},
             "required": ["answer", "findings"], "additionalProperties": false},
        ]});
        let validator = jsonschema::validator_for(&schema).unwrap();
        let (value, kept) = salvage(
            "{\n\"answer\": \"no bug\",\n\"findings\": [\n",
            &validator,
            &schema,
        )
        .unwrap();
        assert_eq!(value, json!({"answer": "no bug", "findings": []}));
        assert_eq!(kept, 0);
        // An entry begun and cut is lost: that is no answer.
        assert_eq!(
            salvage(
                r#"{"answer": "bug", "findings": [{"file": "a"#,
                &validator,
                &schema
            ),
            None
        );
        // The answer itself cut: no shape fits what is left.
        assert_eq!(salvage(r#"{"answer": "bu"#, &validator, &schema), None);
    }
}
