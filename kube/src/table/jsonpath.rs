//! The JSONPath of a CRD's printer column, as client-go's `util/jsonpath`
//! evaluates it with missing keys allowed, for the forms CRDs use: fields
//! (`.spec.size`, `['a.b']`), indices and slices (`[0]`, `[-1]`, `[1:3]`,
//! `[*]`) and filters (`[?(@.type=="Ready")]`, `[?(@.ready)]`). Other forms
//! (recursive descent `..`, unions, `.*`) are refused as not understood.

use std::cmp::Ordering;

use serde_json::Value;

/// A parsed path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Path(Vec<Step>);

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    /// `[start:end:step]`; `[n]` is `[n:n+1]`, with `end` derived.
    Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: Option<i64>,
        derived: bool,
    },
    Filter(Operand, Option<(Op, Operand)>),
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Path(Path),
    Literal(Value),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

/// Where the path cannot be followed (client-go's errors, which leave the
/// cell empty).
#[derive(Debug)]
pub(crate) struct Fail;

fn is_field_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '/')
}

struct Parser<'a> {
    s: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s[self.i..].chars().next()
    }

    fn eat(&mut self, p: &str) -> bool {
        let found = self.s[self.i..].starts_with(p);
        if found {
            self.i += p.len();
        }
        found
    }

    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &str {
        let start = self.i;
        while let Some(c) = self.peek().filter(|&c| f(c)) {
            self.i += c.len_utf8();
        }
        &self.s[start..self.i]
    }

    fn skip_spaces(&mut self) {
        self.take_while(|c| c == ' ');
    }

    /// Steps until `stop` (or the end); `@` paths stop at an operator.
    fn steps(&mut self, in_filter: bool) -> Result<Path, Fail> {
        let mut steps = Vec::new();
        loop {
            if self.eat("..") {
                return Err(Fail);
            } else if self.eat(".") {
                let name = self.take_while(is_field_char).to_owned();
                if name.is_empty() {
                    if self
                        .peek()
                        .is_some_and(|c| !(in_filter && " =!<>)".contains(c)))
                    {
                        return Err(Fail);
                    }
                    continue;
                }
                steps.push(Step::Field(name));
            } else if self.eat("[") {
                steps.push(self.bracket()?);
            } else {
                return Ok(Path(steps));
            }
        }
    }

    fn int(&mut self) -> Result<Option<i64>, Fail> {
        self.skip_spaces();
        let start = self.i;
        self.eat("-");
        self.take_while(|c| c.is_ascii_digit());
        let text = &self.s[start..self.i];
        self.skip_spaces();
        if text.is_empty() {
            Ok(None)
        } else {
            text.parse().map(Some).map_err(|_| Fail)
        }
    }

    fn bracket(&mut self) -> Result<Step, Fail> {
        if let Some(q @ ('\'' | '"')) = self.peek() {
            self.i += 1;
            let name = self.take_while(|c| c != q).to_owned();
            if !self.eat(&q.to_string()) || !self.eat("]") {
                return Err(Fail);
            }
            return Ok(Step::Field(name));
        }
        if self.eat("?(") {
            self.skip_spaces();
            let left = self.operand()?;
            self.skip_spaces();
            let op = [
                ("==", Op::Eq),
                ("!=", Op::Ne),
                ("<=", Op::Le),
                (">=", Op::Ge),
                ("<", Op::Lt),
                (">", Op::Gt),
            ]
            .into_iter()
            .find(|(t, _)| self.eat(t));
            let right = match op {
                Some((_, op)) => {
                    self.skip_spaces();
                    Some((op, self.operand()?))
                }
                None => None,
            };
            self.skip_spaces();
            if !self.eat(")]") {
                return Err(Fail);
            }
            return Ok(Step::Filter(left, right));
        }
        if self.eat("*]") {
            return Ok(Step::Slice {
                start: None,
                end: None,
                step: None,
                derived: false,
            });
        }
        let start = self.int()?;
        if self.eat("]") {
            let n = start.ok_or(Fail)?;
            return Ok(Step::Slice {
                start: Some(n),
                end: Some(n + 1),
                step: None,
                derived: true,
            });
        }
        if !self.eat(":") {
            return Err(Fail);
        }
        let end = self.int()?;
        let step = if self.eat(":") { self.int()? } else { None };
        if !self.eat("]") {
            return Err(Fail);
        }
        Ok(Step::Slice {
            start,
            end,
            step,
            derived: false,
        })
    }

    fn operand(&mut self) -> Result<Operand, Fail> {
        if self.eat("@") {
            return self.steps(true).map(Operand::Path);
        }
        if let Some(q @ ('\'' | '"')) = self.peek() {
            self.i += 1;
            let text = self.take_while(|c| c != q).to_owned();
            return if self.eat(&q.to_string()) {
                Ok(Operand::Literal(Value::from(text)))
            } else {
                Err(Fail)
            };
        }
        let word = self.take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
        let literal = match word {
            "true" => Value::from(true),
            "false" => Value::from(false),
            w if w.contains(['.', 'e', 'E']) => Value::from(w.parse::<f64>().map_err(|_| Fail)?),
            w => Value::from(w.parse::<i64>().map_err(|_| Fail)?),
        };
        Ok(Operand::Literal(literal))
    }
}

impl Path {
    /// A column's `jsonPath` (`.status.replicas`), as the convertor wraps
    /// it: `{.status.replicas}`.
    pub(crate) fn parse(path: &str) -> Result<Path, Fail> {
        let mut p = Parser {
            s: path.trim(),
            i: 0,
        };
        let parsed = p.steps(false)?;
        if p.i != p.s.len() {
            return Err(Fail);
        }
        Ok(parsed)
    }

    /// The values the path finds in `root` (none when a key is missing).
    pub(crate) fn find<'a>(&self, root: &'a Value) -> Result<Vec<&'a Value>, Fail> {
        let mut cur = vec![root];
        for step in &self.0 {
            cur = eval(step, cur)?;
        }
        Ok(cur)
    }
}

fn eval<'a>(step: &Step, input: Vec<&'a Value>) -> Result<Vec<&'a Value>, Fail> {
    let mut out = Vec::new();
    for v in input {
        match step {
            Step::Field(name) => out.extend(v.as_object().and_then(|m| m.get(name))),
            Step::Slice {
                start,
                end,
                step,
                derived,
            } => {
                if v.is_null() {
                    continue;
                }
                let a = v.as_array().ok_or(Fail)?;
                let len = a.len() as i64;
                let mut s = start.unwrap_or(0);
                if s < 0 {
                    s += len;
                }
                let mut e = end.unwrap_or(len);
                if e < 0 || (e == 0 && *derived) {
                    e += len;
                }
                if s == e {
                    return Ok(out);
                }
                if s >= len || s < 0 || e > len || e < 0 || s > e {
                    return Err(Fail);
                }
                let by = match step {
                    Some(n) if *n <= 0 => return Err(Fail),
                    Some(n) => *n as usize,
                    None => 1,
                };
                out.extend(a[s as usize..e as usize].iter().step_by(by));
            }
            Step::Filter(left, right) => {
                let a = v.as_array().ok_or(Fail)?;
                for item in a {
                    let lefts = operand(left, item);
                    let Some((op, right)) = right else {
                        if lefts.is_ok_and(|l| !l.is_empty()) {
                            out.push(item);
                        }
                        continue;
                    };
                    let lefts = lefts?;
                    let l = match lefts.as_slice() {
                        [] => continue,
                        [l] => *l,
                        _ => return Err(Fail),
                    };
                    let rights = operand(right, item)?;
                    let r = match rights.as_slice() {
                        [] => continue,
                        [r] => *r,
                        _ => return Err(Fail),
                    };
                    if compare(*op, l, r)? {
                        out.push(item);
                    }
                }
            }
        }
    }
    Ok(out)
}

fn operand<'a>(o: &'a Operand, item: &'a Value) -> Result<Vec<&'a Value>, Fail> {
    match o {
        Operand::Path(p) => p.find(item),
        Operand::Literal(v) => Ok(vec![v]),
    }
}

/// text/template's comparisons: values of one basic kind (bool, integer,
/// float, string); others are errors.
fn compare(op: Op, l: &Value, r: &Value) -> Result<bool, Fail> {
    let ord = match (l, r) {
        (Value::String(a), Value::String(b)) => a.cmp(b),
        (Value::Bool(a), Value::Bool(b)) if matches!(op, Op::Eq | Op::Ne) => a.cmp(b),
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(a), Some(b)) => a.cmp(&b),
            (None, None) => a
                .as_f64()
                .zip(b.as_f64())
                .and_then(|(a, b)| a.partial_cmp(&b))
                .ok_or(Fail)?,
            _ => return Err(Fail),
        },
        _ => return Err(Fail),
    };
    Ok(match op {
        Op::Eq => ord == Ordering::Equal,
        Op::Ne => ord != Ordering::Equal,
        Op::Lt => ord == Ordering::Less,
        Op::Gt => ord == Ordering::Greater,
        Op::Le => ord != Ordering::Greater,
        Op::Ge => ord != Ordering::Less,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn first(path: &str, v: &Value) -> Option<Value> {
        Path::parse(path)
            .ok()?
            .find(v)
            .ok()?
            .first()
            .map(|v| (*v).clone())
    }

    #[test]
    fn paths_find_what_client_go_finds() {
        let v = json!({"spec": {"size": 3, "a.b": "dot", "tags": ["x", "y", "z"], "n": null},
            "status": {"conditions": [{"type": "Synced", "status": "True"}, {"type": "Ready", "status": "False", "n": 2}]}});
        assert_eq!(first(".spec.size", &v), Some(json!(3)));
        assert_eq!(first(".spec['a.b']", &v), Some(json!("dot")));
        assert_eq!(first(".spec.tags[1]", &v), Some(json!("y")));
        assert_eq!(first(".spec.tags[-1]", &v), Some(json!("z")));
        assert_eq!(first(".spec.tags[1:]", &v), Some(json!("y")));
        assert_eq!(first(".spec.tags[*]", &v), Some(json!("x")));
        assert_eq!(first(".spec.tags[3]", &v), None);
        assert_eq!(first(".spec.n", &v), Some(Value::Null));
        assert_eq!(first(".spec.missing.deeper", &v), None);
        assert_eq!(first(".spec.size[0]", &v), None);
        assert_eq!(
            first(r#".status.conditions[?(@.type=="Ready")].status"#, &v),
            Some(json!("False"))
        );
        assert_eq!(
            first(".status.conditions[?(@.type != 'Ready')].type", &v),
            Some(json!("Synced"))
        );
        assert_eq!(
            first(".status.conditions[?(@.n)].type", &v),
            Some(json!("Ready"))
        );
        assert_eq!(
            first(".status.conditions[?(@.n >= 2)].type", &v),
            Some(json!("Ready"))
        );
        assert_eq!(first(".status.conditions[?(@.n == 'x')].type", &v), None);
        assert_eq!(first(".", &v), Some(v.clone()));
        for bad in [
            "..spec",
            ".spec[",
            ".spec[?(@.a==)]",
            ".spec.tags[a]",
            ".spec.*",
        ] {
            assert!(Path::parse(bad).is_err(), "{bad}");
        }
    }
}
