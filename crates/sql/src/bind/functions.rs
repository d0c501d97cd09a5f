//! Function calls: scalar functions (argument casts and result types as
//! PostgreSQL's catalog has them), aggregates, the special SQL syntaxes
//! (`EXTRACT(.. FROM ..)`, `SUBSTRING(.. FROM .. FOR ..)`, `POSITION(.. IN
//! ..)`, `TRIM(BOTH .. FROM ..)`) and interval literals.
//!
//! Argument order of [`Function`]s: as the SQL function's (`substring(s,
//! from, for)`, `replace(s, from, to)`), except `Position`, whose arguments
//! are `[needle, haystack]` as in `position(needle IN haystack)`, and
//! `Extract`/`DateTrunc`, whose first argument is the field name as a text
//! literal.

use sqlparser::ast;

use super::expr::{ExprCtx, to_bool};
use super::types::common_type;
use super::{Binder, object_name};
use crate::error::{Result, SqlError, SqlState};
use crate::plan::{AggFunc, AggregateExpr, Expr, Function};
use crate::types::{DataType, Interval, NUMERIC_DEFAULT_SCALE, Value};

/// Is `name` an aggregate function?
pub fn is_aggregate(name: &str) -> bool {
    matches!(name, "count" | "sum" | "avg" | "min" | "max" | "bool_and" | "bool_or" | "every")
}

/// The plain argument expressions of a call (`*` as None).
pub fn call_args(f: &ast::Function) -> Result<Vec<Option<&ast::Expr>>> {
    match &f.args {
        ast::FunctionArguments::None => Ok(vec![]),
        ast::FunctionArguments::Subquery(_) => Err(SqlError::unsupported("a subquery as function arguments")),
        ast::FunctionArguments::List(list) => list
            .args
            .iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(Some(e)),
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => Ok(None),
                other => Err(SqlError::unsupported(format!("function argument {other} is not supported"))),
            })
            .collect(),
    }
}

fn is_distinct(f: &ast::Function) -> bool {
    matches!(&f.args, ast::FunctionArguments::List(l) if l.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct))
}

/// PostgreSQL's 42883 for a call without a matching function.
pub fn no_function(name: &str, args: &[DataType]) -> SqlError {
    let sig: Vec<&str> = args.iter().map(|t| super::types::base_name(*t)).collect();
    SqlError::new(SqlState::UNDEFINED_FUNCTION, format!("function {name}({}) does not exist", sig.join(", ")))
        .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.")
}

impl Binder<'_> {
    /// A function call outside aggregate handling.
    pub fn function(&mut self, f: &ast::Function, ctx: &mut ExprCtx) -> Result<Expr> {
        let name = object_name(&f.name)?;
        if let (ast::FunctionArguments::Subquery(q), "array") = (&f.args, name.as_str()) {
            return self.subquery(q, crate::plan::SubqueryKind::Array, ctx);
        }
        if f.over.is_some() {
            return Err(SqlError::unsupported("window functions are not supported yet"));
        }
        if is_aggregate(&name) {
            if let Some(outer) = self.outer_aggregate(f, ctx.scope)? {
                return Ok(outer);
            }
            let message = if ctx.clause == "aggregate" {
                "aggregate function calls cannot be nested".to_string()
            } else {
                format!("aggregate functions are not allowed in {}", ctx.clause)
            };
            return Err(SqlError::new(SqlState::GROUPING_ERROR, message));
        }
        let mut args = Vec::new();
        for a in call_args(f)? {
            let a = a.ok_or_else(|| SqlError::syntax(format!("syntax error at or near \"*\" in {name}(*)")))?;
            args.push(self.expr(a, ctx)?);
        }
        self.scalar(&name, args)
    }

    /// An aggregate call, its argument and FILTER bound over `input`.
    pub fn aggregate(&mut self, f: &ast::Function, input: &super::scope::Scope) -> Result<AggregateExpr> {
        let name = object_name(&f.name)?;
        if f.over.is_some() {
            return Err(SqlError::unsupported("window functions are not supported yet"));
        }
        let mut ctx = ExprCtx::new(input, "aggregate");
        let args = call_args(f)?;
        let filter = match &f.filter {
            Some(cond) => Some(to_bool(self.expr(cond, &mut ExprCtx::new(input, "FILTER"))?, "FILTER")?),
            None => None,
        };
        let distinct = is_distinct(f);
        if name == "count" && matches!(args.as_slice(), [None]) {
            return Ok(AggregateExpr {
                func: AggFunc::CountStar,
                arg: None,
                distinct: false,
                filter,
                ty: DataType::Int64,
            });
        }
        let arg = match args.as_slice() {
            [Some(a)] => self.expr(a, &mut ctx)?,
            _ => return Err(no_function(&name, &[])),
        };
        let (func, arg, ty) = self.aggregate_type(&name, arg)?;
        if !self.outer.is_empty() {
            super::aggregate::check_level_of_subquery_args([Some(&arg), filter.as_ref()])?;
        }
        Ok(AggregateExpr { func, arg: Some(arg), distinct, filter, ty })
    }

    fn aggregate_type(&mut self, name: &str, arg: Expr) -> Result<(AggFunc, Expr, DataType)> {
        let t = arg.ty();
        let numeric0 = DataType::Numeric { precision: None, scale: 0 };
        let (func, ty) = match (name, t) {
            ("count", _) => (AggFunc::Count, DataType::Int64),
            ("sum", DataType::Int16 | DataType::Int32) => (AggFunc::Sum, DataType::Int64),
            ("sum", DataType::Int64) => (AggFunc::Sum, numeric0),
            ("sum", DataType::Numeric { scale, .. }) => (AggFunc::Sum, DataType::Numeric { precision: None, scale }),
            ("sum" | "avg", DataType::Float64) => (AggFunc::from_name(name), DataType::Float64),
            ("sum", DataType::Interval) => (AggFunc::Sum, DataType::Interval),
            ("avg", t) if t.is_integer() => {
                (AggFunc::Avg, DataType::Numeric { precision: None, scale: NUMERIC_DEFAULT_SCALE })
            }
            ("avg", DataType::Numeric { scale, .. }) => {
                (AggFunc::Avg, DataType::Numeric { precision: None, scale: scale.max(NUMERIC_DEFAULT_SCALE) })
            }
            ("min" | "max", DataType::Unknown) => (AggFunc::from_name(name), DataType::Text),
            ("min" | "max", t) if t != DataType::Bool => (AggFunc::from_name(name), t),
            ("bool_and" | "bool_or" | "every", DataType::Bool | DataType::Unknown) => {
                (AggFunc::from_name(name), DataType::Bool)
            }
            _ => return Err(no_function(name, &[t])),
        };
        let arg = if t == DataType::Unknown {
            self.coerce(arg, if ty == DataType::Bool { ty } else { DataType::Text })?
        } else {
            arg
        };
        Ok((func, arg, ty))
    }

    /// A scalar function over bound arguments.
    pub fn scalar(&mut self, name: &str, args: Vec<Expr>) -> Result<Expr> {
        let types: Vec<DataType> = args.iter().map(Expr::ty).collect();
        let fail = || no_function(name, &types);
        if super::pgcompat::handles(name) {
            return self.pg_function(name, args);
        }
        match (name, args.len()) {
            ("coalesce" | "greatest" | "least", n) if n >= 1 => self.variadic(name, args),
            ("nullif", 2) => self.nullif(args),
            ("abs", 1)
            | ("round" | "trunc", 1 | 2)
            | ("floor" | "ceil" | "ceiling" | "sqrt" | "sign", 1)
            | ("power" | "pow", 2) => self.number_function(name, args).map_err(|_| fail()),
            ("mod", 2) => {
                let [a, b]: [Expr; 2] = args.try_into().map_err(|_| fail())?;
                self.mod_function(a, b).map_err(|e| if e.code == SqlState::UNDEFINED_FUNCTION { fail() } else { e })
            }
            ("date_part" | "extract" | "date_trunc", 2) => self.date_function(name, args).map_err(|_| fail()),
            ("now" | "current_timestamp" | "localtimestamp" | "transaction_timestamp" | "statement_timestamp", 0) => {
                Ok(call(Function::Now, vec![], DataType::Timestamp))
            }
            ("current_date", 0) => Ok(call(Function::CurrentDate, vec![], DataType::Date)),
            ("version", 0) => Ok(call(Function::Version, vec![], DataType::Text)),
            ("current_schema", 0) => Ok(call(Function::CurrentSchema, vec![], DataType::Text)),
            ("current_database" | "current_catalog", 0) => Ok(call(Function::CurrentDatabase, vec![], DataType::Text)),
            // concat prints each argument with its type's output function
            // (`t` for true, where `true::text` is 'true').
            ("concat", _) => Ok(call(Function::Concat, self.untyped_as_text(args)?, DataType::Text)),
            ("concat_ws", n) if n >= 1 => Ok(call(Function::ConcatWs, self.untyped_as_text(args)?, DataType::Text)),
            _ => {
                self.text_function(name, args).map_err(|e| if e.code == SqlState::INTERNAL_ERROR { fail() } else { e })
            }
        }
    }

    /// Untyped literals become text; other arguments keep their types.
    fn untyped_as_text(&mut self, args: Vec<Expr>) -> Result<Vec<Expr>> {
        args.into_iter()
            .map(|a| if a.ty() == DataType::Unknown { self.coerce(a, DataType::Text) } else { Ok(a) })
            .collect()
    }

    /// `mod(a, b)`: the `%` operator's types and semantics.
    fn mod_function(&mut self, a: Expr, b: Expr) -> Result<Expr> {
        self.arithmetic(crate::plan::BinaryOp::Mod, a, b)
    }

    fn variadic(&mut self, name: &str, args: Vec<Expr>) -> Result<Expr> {
        let types: Vec<DataType> = args.iter().map(Expr::ty).collect();
        let ty = common_type(&types, &name.to_uppercase())?;
        let args = args.into_iter().map(|a| self.coerce(a, ty)).collect::<Result<Vec<_>>>()?;
        let func = match name {
            "coalesce" => Function::Coalesce,
            "greatest" => Function::Greatest,
            _ => Function::Least,
        };
        Ok(call(func, args, ty))
    }

    fn nullif(&mut self, args: Vec<Expr>) -> Result<Expr> {
        let [a, b]: [Expr; 2] = args.try_into().map_err(|_| SqlError::internal("nullif arity"))?;
        let cmp = self.comparison(crate::plan::BinaryOp::Eq, a, b)?;
        let Expr::Binary { left, right, .. } = cmp else { return Err(SqlError::internal("nullif comparison")) };
        let ty = left.ty();
        Ok(call(Function::NullIf, vec![*left, *right], ty))
    }

    fn number_function(&mut self, name: &str, mut args: Vec<Expr>) -> Result<Expr> {
        let t = args[0].ty();
        let numeric0 = DataType::Numeric { precision: None, scale: 0 };
        // Integers go to float8 (PostgreSQL's preferred numeric type), except
        // for abs, which has integer versions.
        // round/trunc with a digits argument exist only for numeric.
        let with_digits = matches!(name, "round" | "trunc") && args.len() == 2;
        // power(int, numeric) resolves to power(numeric, numeric): PostgreSQL
        // prefers the candidate that matches more argument types exactly.
        let other = if matches!(name, "power" | "pow") { args.get(1).map(Expr::ty) } else { None };
        let other_float = other == Some(DataType::Float64);
        let other_numeric = matches!(other, Some(DataType::Numeric { .. }));
        let float = t == DataType::Float64
            || other_float
            || (t.is_integer() && name != "abs" && !with_digits && !other_numeric);
        if !t.is_numeric() && t != DataType::Unknown {
            return Err(SqlError::internal("not a number"));
        }
        let arg_ty = if float {
            DataType::Float64
        } else if t.is_integer() && name == "abs" {
            t
        } else if let DataType::Numeric { .. } = t {
            t
        } else {
            numeric0
        };
        let first = std::mem::replace(&mut args[0], Expr::literal(Value::Null));
        args[0] = self.coerce(first, arg_ty)?;
        let (func, ty) = match name {
            "abs" => (Function::Abs, arg_ty),
            "round" | "trunc" => {
                let func = if name == "round" { Function::Round } else { Function::Trunc };
                match (float, args.get(1)) {
                    (true, None) => (func, DataType::Float64),
                    (true, Some(_)) => return Err(SqlError::internal("round(float, int)")),
                    (false, None) => (func, numeric0),
                    (false, Some(Expr::Literal { value: Value::Int32(s), .. })) if (0..=38).contains(s) => {
                        (func, DataType::Numeric { precision: None, scale: *s as u8 })
                    }
                    // A negative digits count rounds left of the point: scale 0.
                    (false, Some(Expr::Literal { value: Value::Int32(s), .. })) if *s < 0 => (func, numeric0),
                    (false, Some(_)) => (func, arg_ty),
                }
            }
            "floor" | "ceil" | "ceiling" => {
                let func = if name == "floor" { Function::Floor } else { Function::Ceil };
                (func, if float { DataType::Float64 } else { numeric0 })
            }
            "sign" => (Function::Sign, if float { DataType::Float64 } else { numeric0 }),
            "sqrt" => (Function::Sqrt, if float { DataType::Float64 } else { numeric_div() }),
            _ => {
                let b = args.remove(1);
                let b_ty = match b.ty() {
                    _ if float => DataType::Float64,
                    t @ DataType::Numeric { .. } => t,
                    _ => numeric0,
                };
                let b = self.coerce(b, b_ty)?;
                args.push(b);
                (Function::Power, if float { DataType::Float64 } else { numeric_div() })
            }
        };
        if args.len() == 2 && func != Function::Power {
            let s = args.remove(1);
            args.push(self.coerce(s, DataType::Int32)?);
        }
        Ok(call(func, args, ty))
    }

    fn date_function(&mut self, name: &str, mut args: Vec<Expr>) -> Result<Expr> {
        let field = match &args[0] {
            Expr::Literal { value: Value::Text(s), .. } => s.to_lowercase(),
            _ => return Err(SqlError::unsupported(format!("{name} needs a literal field name"))),
        };
        args[0] = Expr::literal(Value::Text(field.clone()));
        let t = args[1].ty();
        let arg_ty = match t {
            DataType::Unknown => DataType::Timestamp,
            DataType::Date if name == "date_trunc" => DataType::Timestamp,
            DataType::Date | DataType::Timestamp | DataType::Interval => t,
            _ => return Err(SqlError::internal("not a date")),
        };
        let value = std::mem::replace(&mut args[1], Expr::literal(Value::Null));
        args[1] = self.coerce(value, arg_ty)?;
        let (func, ty) = match name {
            "date_trunc" => {
                (Function::DateTrunc, if arg_ty == DataType::Interval { arg_ty } else { DataType::Timestamp })
            }
            "date_part" => (Function::Extract, DataType::Float64),
            _ => {
                let scale = if matches!(field.as_str(), "second" | "seconds" | "epoch") { 6 } else { 0 };
                (Function::Extract, DataType::Numeric { precision: None, scale })
            }
        };
        Ok(call(func, args, ty))
    }

    /// Text functions; an INTERNAL error means "no such signature" (the
    /// caller turns it into 42883).
    fn text_function(&mut self, name: &str, args: Vec<Expr>) -> Result<Expr> {
        use Function as F;
        let (func, sig, ty): (F, &[DataType], DataType) = match (name, args.len()) {
            ("length" | "char_length" | "character_length", 1) => (F::Length, &[DataType::Text], DataType::Int32),
            ("lower", 1) => (F::Lower, &[DataType::Text], DataType::Text),
            ("upper", 1) => (F::Upper, &[DataType::Text], DataType::Text),
            ("substring" | "substr", 2) => (F::Substring, &[DataType::Text, DataType::Int32], DataType::Text),
            ("substring" | "substr", 3) => {
                (F::Substring, &[DataType::Text, DataType::Int32, DataType::Int32], DataType::Text)
            }
            ("position", 2) => (F::Position, &[DataType::Text, DataType::Text], DataType::Int32),
            ("strpos", 2) => return self.text_function("position", args.into_iter().rev().collect()),
            ("btrim" | "trim", 1 | 2) => (F::Trim, &[DataType::Text, DataType::Text], DataType::Text),
            ("ltrim", 1 | 2) => (F::Ltrim, &[DataType::Text, DataType::Text], DataType::Text),
            ("rtrim", 1 | 2) => (F::Rtrim, &[DataType::Text, DataType::Text], DataType::Text),
            ("replace", 3) => (F::Replace, &[DataType::Text, DataType::Text, DataType::Text], DataType::Text),
            ("left", 2) => (F::Left, &[DataType::Text, DataType::Int32], DataType::Text),
            ("right", 2) => (F::Right, &[DataType::Text, DataType::Int32], DataType::Text),
            ("lpad", 2 | 3) => (F::Lpad, &[DataType::Text, DataType::Int32, DataType::Text], DataType::Text),
            ("rpad", 2 | 3) => (F::Rpad, &[DataType::Text, DataType::Int32, DataType::Text], DataType::Text),
            ("starts_with", 2) => (F::StartsWith, &[DataType::Text, DataType::Text], DataType::Bool),
            ("repeat", 2) => (F::Repeat, &[DataType::Text, DataType::Int32], DataType::Text),
            ("reverse", 1) => (F::Reverse, &[DataType::Text], DataType::Text),
            ("split_part", 3) => (F::SplitPart, &[DataType::Text, DataType::Text, DataType::Int32], DataType::Text),
            ("octet_length", 1) => (F::OctetLength, &[DataType::Text], DataType::Int32),
            ("ascii", 1) => (F::Ascii, &[DataType::Text], DataType::Int32),
            ("chr", 1) => (F::Chr, &[DataType::Int32], DataType::Text),
            ("initcap", 1) => (F::Initcap, &[DataType::Text], DataType::Text),
            _ => return Err(SqlError::internal("no such function")),
        };
        let mut out = Vec::with_capacity(args.len());
        for (a, want) in args.into_iter().zip(sig) {
            let t = a.ty();
            let ok = t == DataType::Unknown
                || (want.is_text() && t.is_text())
                || (*want == DataType::Int32 && (t == DataType::Int16 || t == DataType::Int32));
            if !ok {
                return Err(SqlError::internal("argument type"));
            }
            // char(n) is cast (trailing blanks dropped), as PostgreSQL does
            // for its text functions; varchar is text already.
            // octet_length counts a char(n)'s padding, as PostgreSQL's does.
            let keep = want.is_text()
                && (matches!(t, DataType::Text | DataType::Varchar(_))
                    || (func == F::OctetLength && matches!(t, DataType::Char(_))));
            out.push(if keep { a } else { self.coerce(a, *want)? });
        }
        Ok(call(func, out, ty))
    }

    /// The functions with SQL's own syntax.
    pub fn special_function(&mut self, e: &ast::Expr, ctx: &mut ExprCtx) -> Result<Expr> {
        use ast::Expr as A;
        match e {
            A::Extract { field, expr, .. } => {
                let x = self.expr(expr, ctx)?;
                let field = Expr::literal(Value::Text(field_name(field)));
                self.scalar("extract", vec![field, x])
            }
            A::Ceil { expr, .. } => {
                let x = self.expr(expr, ctx)?;
                self.scalar("ceil", vec![x])
            }
            A::Floor { expr, .. } => {
                let x = self.expr(expr, ctx)?;
                self.scalar("floor", vec![x])
            }
            A::Position { expr, r#in } => {
                let needle = self.expr(expr, ctx)?;
                let hay = self.expr(r#in, ctx)?;
                self.scalar("position", vec![needle, hay])
            }
            A::Substring { expr, substring_from, substring_for, .. } => {
                let mut args = vec![self.expr(expr, ctx)?];
                let from = match substring_from {
                    Some(f) => self.expr(f, ctx)?,
                    None => Expr::literal(Value::Int32(1)),
                };
                args.push(from);
                if let Some(n) = substring_for {
                    args.push(self.expr(n, ctx)?);
                }
                self.scalar("substring", args)
            }
            A::Trim { trim_where, trim_what, expr, trim_characters } => {
                let mut args = vec![self.expr(expr, ctx)?];
                if let Some(w) = trim_what {
                    args.push(self.expr(w, ctx)?);
                } else if let Some(chars) = trim_characters.as_ref().and_then(|c| c.first()) {
                    args.push(self.expr(chars, ctx)?);
                }
                let name = match trim_where {
                    Some(ast::TrimWhereField::Leading) => "ltrim",
                    Some(ast::TrimWhereField::Trailing) => "rtrim",
                    _ => "btrim",
                };
                self.scalar(name, args)
            }
            other => Err(SqlError::unsupported(format!("expression {other} is not supported"))),
        }
    }
}

impl AggFunc {
    fn from_name(name: &str) -> AggFunc {
        match name {
            "sum" => AggFunc::Sum,
            "avg" => AggFunc::Avg,
            "min" => AggFunc::Min,
            "max" => AggFunc::Max,
            "bool_or" => AggFunc::BoolOr,
            "bool_and" | "every" => AggFunc::BoolAnd,
            _ => AggFunc::Count,
        }
    }
}

fn numeric_div() -> DataType {
    DataType::Numeric { precision: None, scale: NUMERIC_DEFAULT_SCALE }
}

fn call(func: Function, args: Vec<Expr>, ty: DataType) -> Expr {
    Expr::Function { func, args, ty }
}

/// EXTRACT's field as the lower-case name `date_part` takes.
fn field_name(field: &ast::DateTimeField) -> String {
    match field {
        ast::DateTimeField::Custom(id) => id.value.to_lowercase(),
        other => other.to_string().to_lowercase(),
    }
}

/// PostgreSQL's interval input in the forms queries use: `'3 month'`,
/// `'1 year 2 months'`, `'90'` with a unit (`interval '90' day`), an
/// optional `hh:mm[:ss]` part.
pub fn parse_interval(text: &str, unit: Option<&str>) -> Result<Interval> {
    let bad = || {
        SqlError::new(SqlState::INVALID_DATETIME_FORMAT, format!("invalid input syntax for type interval: \"{text}\""))
    };
    let mut iv = Interval::default();
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if w.contains(':') {
            add_time(&mut iv, w).ok_or_else(bad)?;
            i += 1;
            continue;
        }
        let n: f64 = w.parse().map_err(|_| bad())?;
        let u = match words.get(i + 1) {
            Some(u) if u.parse::<f64>().is_err() && !u.contains(':') => {
                i += 2;
                u.to_lowercase()
            }
            _ => {
                i += 1;
                unit.unwrap_or("second").to_string()
            }
        };
        add_unit(&mut iv, n, u.trim_end_matches('s')).ok_or_else(bad)?;
    }
    if words.is_empty() {
        return Err(bad());
    }
    Ok(iv)
}

fn add_unit(iv: &mut Interval, n: f64, unit: &str) -> Option<()> {
    match unit {
        "year" | "yr" | "y" => iv.months = iv.months.checked_add((n * 12.0) as i32)?,
        "month" | "mon" => iv.months = iv.months.checked_add(n as i32)?,
        "week" | "w" => iv.days = iv.days.checked_add((n * 7.0) as i32)?,
        "day" | "d" => iv.days = iv.days.checked_add(n as i32)?,
        "hour" | "h" | "hr" => iv.micros = iv.micros.checked_add((n * 3_600e6) as i64)?,
        "minute" | "min" | "m" => iv.micros = iv.micros.checked_add((n * 60e6) as i64)?,
        "second" | "sec" | "" => iv.micros = iv.micros.checked_add((n * 1e6) as i64)?,
        _ => return None,
    }
    Some(())
}

fn add_time(iv: &mut Interval, w: &str) -> Option<()> {
    let parts: Vec<f64> = w.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let secs = match parts.as_slice() {
        [h, m] => h * 3600.0 + m * 60.0,
        [h, m, s] => h * 3600.0 + m * 60.0 + s,
        _ => return None,
    };
    iv.micros = iv.micros.checked_add((secs * 1e6) as i64)?;
    Some(())
}
