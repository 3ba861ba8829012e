//! Planning one statement against the shard rules: which sub-tables it goes to, the SQL
//! each receives (rewritten on the AST), and how the answers merge.
//!
//! Entry points: [`plan`] for text statements, [`plan_prepared`] for prepared ones.
//! `Ok(None)`: the statement touches no sharded table (the caller treats it normally).
//! `Err(Refusal)`: it does, and sluice cannot answer it exactly; the caller answers with
//! MySQL error 1235 (`ER_NOT_SUPPORTED_YET`) and the refusal's sentence. Never a wrong or a
//! partial result.
//!
//! Every plan has at least one part. Select parts whose plan has one part carry the
//! client's statement unchanged except for the sub-table name and pruned IN lists, with a
//! plain `MergeSpec` (no order, limit or grouping): their result can be relayed as is.

use sqlparser::ast::{ObjectName, OrderBy, Query, SetExpr, Statement, TableFactor};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

use super::hazards::{refuse_hazards_across, refuse_read_hazards};
use super::names::name_items_as_written;
use super::params::{Charset, ParamValue};
pub use super::part::{mentions_statement_time, Part, PartSettings, PartSql};
use super::rule::{ShardRule, ShardRules};
use super::spec::MergeSpec;
use super::split::{split_insert, Split};
use super::text::{
    depth_bound, keep_0x_hex, names_table_cheaply, parse, placeholders, tokenize, Source, MAX_EXPR_DEPTH,
};
use super::walk::{idents, walk, walk_select, Visit};
use super::{ddl, dml, select};

/// Why sluice refuses a statement: a sentence for the client (error 1235).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// How a statement on a sharded table runs.
#[derive(Debug, Clone, PartialEq)]
pub enum ShardPlan {
    /// Rows from several shards merged per the spec.
    Select {
        parts: Vec<Part>,
        merge: MergeSpec,
        /// `Some(h)` when the select list holds `*` or `t.*`: the number of visible columns
        /// is then only known from the shards' column count `c` (it is `c - h`, the last
        /// `h` columns being helpers). `merge` is written as if `visible` were 0, its
        /// column indices counting from the first helper; [`bind_merge`] gives the real spec.
        wildcard_helpers: Option<usize>,
    },
    /// INSERT/UPDATE/DELETE/REPLACE: affected rows summed; DDL on the logical table: the
    /// same statement per sub-table.
    Write {
        parts: Vec<Part>,
        ddl: bool,
        /// An INSERT's sub-table holding the statement's last row: the server's OK packet
        /// reports the AUTO_INCREMENT value of the last row written (when no value was
        /// generated), so the merged OK takes that part's insert id.
        insert_id_from: Option<u32>,
    },
}

impl ShardPlan {
    pub fn parts(&self) -> &[Part] {
        match self {
            ShardPlan::Select { parts, .. } | ShardPlan::Write { parts, .. } => parts,
        }
    }
}

/// The merge spec of a Select plan for shards returning `shard_columns` columns: `merge`
/// itself when the select list has no wildcard (checking the count), else `merge` with
/// `visible = shard_columns - h` and every column index shifted by it.
pub fn bind_merge(
    merge: &MergeSpec,
    wildcard_helpers: Option<usize>,
    shard_columns: usize,
) -> Result<MergeSpec, Refusal> {
    let Some(h) = wildcard_helpers else {
        let needed = merge.visible + helper_count(merge);
        if shard_columns < needed {
            return Err(Refusal(format!(
                "sluice: the shards returned {shard_columns} columns where {needed} were expected"
            )));
        }
        return Ok(merge.clone());
    };
    let Some(shift) = shard_columns.checked_sub(h) else {
        return Err(Refusal(format!(
            "sluice: the shards returned {shard_columns} columns, fewer than the {h} helpers"
        )));
    };
    let mut m = merge.clone();
    m.visible = shift;
    for k in &mut m.order_by {
        k.col += shift;
    }
    if let Some(g) = &mut m.group {
        // Grouping with a wildcard is refused; nothing to shift, kept for completeness.
        for k in &mut g.keys {
            *k += shift;
        }
        for a in &mut g.aggs {
            a.col += shift;
        }
        for k in &mut g.order_after {
            k.col += shift;
        }
    }
    Ok(m)
}

/// Highest column index the spec uses, minus the visible ones (0 when none).
fn helper_count(m: &MergeSpec) -> usize {
    let mut max = m.order_by.iter().map(|k| k.col + 1).max().unwrap_or(0);
    if let Some(g) = &m.group {
        max = max
            .max(g.keys.iter().map(|k| k + 1).max().unwrap_or(0))
            .max(g.aggs.iter().map(|a| a.col + 1).max().unwrap_or(0));
        if let Some(c) = &g.concat {
            let cols = c.items.iter().flat_map(|i| [i.col, i.len_col, i.sep_col]);
            max = max.max(
                cols.chain([c.rows_col, c.max_len_col])
                    .map(|c| c + 1)
                    .max()
                    .unwrap_or(0),
            );
        }
    }
    max.saturating_sub(m.visible)
}

/// Plans a text statement (COM_QUERY). `current_db` resolves unqualified table names.
///
/// A statement with `?` placeholders that touches a sharded table is refused here: plan it
/// with [`plan_prepared`].
pub fn plan(sql: &str, current_db: Option<&str>, rules: &ShardRules) -> Result<Option<ShardPlan>, Refusal> {
    plan_inner(sql, current_db, rules)
}

/// Plans a prepared statement for execution with its placeholders kept: every part runs
/// as a prepared statement on its sub-table with the client's own typed parameters
/// ([`Part::params`]), so the server computes (types, lengths, character sets, binary
/// bytes, DECIMAL arithmetic) exactly what it computes for the unsharded statement. The
/// values only choose the shards (a key compared with or inserted as a parameter routes
/// as a literal would) and, where the merge compares with one (HAVING) or counts rows by
/// it (LIMIT), are read there. A parameter's value is never written into SQL. `cs`: the
/// session's character set settings (a non-ASCII string in a character set other than
/// UTF-8 places nothing).
pub fn plan_prepared(
    sql: &str,
    params: &[ParamValue],
    cs: &Charset,
    current_db: Option<&str>,
    rules: &ShardRules,
) -> Result<Option<ShardPlan>, Refusal> {
    if params.is_empty() || rules.is_empty() || !rules.mentioned_in(sql) {
        let mut planned = plan_inner(sql, current_db, rules)?;
        // A read's parts run as prepared statements even without placeholders: the
        // client asked for the binary protocol's answer (see `Part::runs_prepared`).
        if let Some(ShardPlan::Select { parts, .. }) = &mut planned {
            for part in parts {
                part.prepared = true;
            }
        }
        return Ok(planned);
    }
    let values = placement_values(params, cs);
    if let Split::Plan(p) = split_insert(sql.as_bytes(), Some(&values), current_db, rules)? {
        return Ok(Some(*p));
    }
    plan_placeholders(sql, &values, current_db, rules)
}

/// The values as placement reads them: a non-ASCII string in a client character set
/// other than UTF-8 is [`ParamValue::Foreign`] (the server converts it before comparing,
/// so its bytes say nothing about its shard).
fn placement_values(params: &[ParamValue], cs: &Charset) -> Vec<ParamValue> {
    params
        .iter()
        .map(|v| match v {
            ParamValue::Bytes(b) if !b.is_ascii() && !cs.utf8_client() => ParamValue::Foreign(b.clone()),
            v => v.clone(),
        })
        .collect()
}

/// Plans a prepared statement with its placeholders kept (see [`Part::params`]). Each `?`
/// is tagged with its parameter index (`?3`, which sqlparser keeps as a placeholder and
/// renders as written) so that every rewrite (helper columns, `AVG` split into `SUM` and
/// `COUNT`, ORDER BY as positions) keeps track of it, and the key routing reads its value;
/// the tags are then read back from each part's text with the tokenizer and turned into
/// plain `?`.
fn plan_placeholders(
    sql: &str,
    params: &[ParamValue],
    current_db: Option<&str>,
    rules: &ShardRules,
) -> Result<Option<ShardPlan>, Refusal> {
    // The same bound as the text plan's: memory and time in proportion to the size.
    if sql.len() > rules.max_statement_size() {
        return Err(Refusal(format!(
            "sluice: this prepared statement on a sharded table is {} bytes; sluice plans at most {} \
             (sharding.max_statement_size)",
            sql.len(),
            rules.max_statement_size()
        )));
    }
    let mut tokens = tokenize(sql).map_err(Refusal)?;
    let Some(named) = mentions_tokens(rules, &tokens) else {
        return Ok(None);
    };
    let mut index = 0usize;
    for t in &mut tokens {
        if let Token::Placeholder(p) = &mut t.token {
            if p != "?" {
                return Err(Refusal(format!("sluice: the placeholder {p} is not supported")));
            }
            *p = format!("?{index}");
            index += 1;
        }
    }
    if index != params.len() {
        return Err(Refusal("sluice: parameter count mismatch".into()));
    }
    let src = Source::new(sql);
    keep_0x_hex(&mut tokens, &src);
    // Only shallow statements: deeper ones are refused (planned on the caller's stack).
    if depth_bound(&tokens) > INLINE_DEPTH {
        return Err(Refusal(format!(
            "sluice: the expressions in this prepared statement on sharded table {named} nest too \
             deeply (sluice plans at most {INLINE_DEPTH} levels with parameters)"
        )));
    }
    let mut stmts = parse(tokens.clone()).map_err(|e| {
        Refusal(format!(
            "sluice: cannot parse this statement on sharded table {named}: {e}"
        ))
    })?;
    if stmts.len() != 1 {
        return Err(Refusal("sluice: not one statement".into()));
    }
    let mut stmt = stmts.remove(0);
    let placeholder_at: Vec<Location> = tokens
        .iter()
        .filter(|t| matches!(t.token, Token::Placeholder(_)))
        .map(|t| t.span.start)
        .collect();
    name_items_as_written(&mut stmt, &tokens, &src, &placeholder_at);
    let hazards = refuse_read_hazards(&stmt, &tokens, sql, &named)?;
    let ctx = Ctx {
        rules,
        db: current_db,
        src,
        tokens,
        spliceable: true,
        forced_shards: None,
        values: Some(params),
    };
    let mut planned = plan_statement(stmt, &ctx)?;
    refuse_hazards_across(hazards, planned.as_ref(), &named)?;
    if let Some(ShardPlan::Write { ddl: true, .. }) = planned {
        // The server prepares no DDL with parameters.
        return Err(Refusal(format!(
            "sluice: cannot rewrite this statement for the sub-tables of sharded table {named}"
        )));
    }
    let parts = match &mut planned {
        Some(ShardPlan::Select { parts, .. } | ShardPlan::Write { parts, .. }) => parts,
        None => return Ok(None),
    };
    for part in parts {
        let (sql, order) = untag(&part.sql.text(), params.len())?;
        part.sql = sql.into();
        part.params = order;
        part.prepared = true;
    }
    Ok(planned)
}

/// A part's text with its tagged placeholders (`?3`) made plain (`?`), and the parameter
/// index of each, in order of appearance. Read with the tokenizer, so text inside string
/// literals, quoted names and comments is never taken for a placeholder.
fn untag(sql: &str, count: usize) -> Result<(String, Vec<u16>), Refusal> {
    let internal = || Refusal("sluice: internal error: placeholder lost in a rewrite".into());
    let tokens = tokenize(sql).map_err(|_| internal())?;
    let src = Source::new(sql);
    let mut out = String::with_capacity(sql.len());
    let mut order = Vec::new();
    let mut at = 0usize;
    for t in &tokens {
        let Token::Placeholder(p) = &t.token else { continue };
        let i: usize = p
            .strip_prefix('?')
            .and_then(|d| d.parse().ok())
            .ok_or_else(internal)?;
        if i >= count {
            return Err(internal());
        }
        let (a, b) = src
            .offset(t.span.start)
            .zip(src.offset(t.span.end))
            .ok_or_else(internal)?;
        out.push_str(sql.get(at..a).ok_or_else(internal)?);
        out.push('?');
        at = b;
        order.push(u16::try_from(i).map_err(|_| internal())?);
    }
    out.push_str(sql.get(at..).ok_or_else(internal)?);
    Ok((out, order))
}

fn plan_inner(sql: &str, current_db: Option<&str>, rules: &ShardRules) -> Result<Option<ShardPlan>, Refusal> {
    if rules.is_empty() || !rules.mentioned_in(sql) {
        return Ok(None);
    }
    // What mariadb-dump writes around the rows (LOCK TABLES, DISABLE KEYS), by tokens.
    if let Some(p) = super::dump::plan_dump_statement(sql, current_db, rules) {
        return p.map(Some);
    }
    // INSERT … VALUES is split from the client's bytes, in one pass, at any size.
    let not_split = match split_insert(sql.as_bytes(), None, current_db, rules)? {
        Split::Plan(p) => return Ok(Some(*p)),
        Split::Other(why) => why,
    };
    // Planning costs memory and time in proportion to the statement (tokens, tree, parts):
    // too large a one is refused before it is tokenized.
    let size = sql.len();
    if size > rules.max_statement_size() {
        if !names_table_cheaply(sql, rules) {
            return Ok(None);
        }
        if is_insert(sql) {
            return Err(Refusal(format!(
                "sluice: this INSERT on a sharded table cannot be split row by row ({not_split}) and is \
                 {size} bytes; sluice plans other statements of at most {} bytes \
                 (sharding.max_statement_size)",
                rules.max_statement_size()
            )));
        }
        return Err(Refusal(format!(
            "sluice: this statement on a sharded table is {size} bytes; sluice plans at most {} \
             (sharding.max_statement_size)",
            rules.max_statement_size()
        )));
    }
    let tokens = tokenize(sql).map_err(|e| {
        Refusal(format!(
            "sluice: cannot read a statement that names a sharded table: {e}"
        ))
    })?;
    let Some(named) = mentions_tokens(rules, &tokens) else {
        return refuse_prepared_text(&tokens, rules);
    };
    let src = Source::new(sql);
    let placeholder_count = placeholders(&tokens);
    let mut tokens = tokens;
    keep_0x_hex(&mut tokens, &src);
    // Before parsing: the tree must never be deeper than what can be walked and dropped.
    let depth = depth_bound(&tokens);
    if depth > MAX_EXPR_DEPTH {
        return Err(Refusal(format!(
            "sluice: the expressions in this statement on sharded table {named} nest too deeply \
             (up to {depth} levels; sluice plans at most {MAX_EXPR_DEPTH})"
        )));
    }
    let parsed = Parsed {
        named,
        src,
        tokens,
        placeholder_count,
    };
    if depth <= INLINE_DEPTH {
        return plan_parsed(parsed, current_db, rules);
    }
    // Deeper trees are walked on a thread of their own with a stack sized for
    // MAX_EXPR_DEPTH; only plain data (the plan) comes back.
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("sluice-plan".into())
            .stack_size(DEEP_STACK)
            .spawn_scoped(scope, || plan_parsed(parsed, current_db, rules))
            .map_err(|e| Refusal(format!("sluice: cannot plan this statement now: {e}")))?
            .join()
            .unwrap_or_else(|_| Err(Refusal("sluice: planning this statement failed".into())))
    })
}

/// Whether the statement's first word is INSERT or REPLACE (after whitespace and plain
/// comments).
fn is_insert(sql: &str) -> bool {
    let mut lx = super::lex::Lexer::new(sql);
    lx.next_tok().is_some_and(|t| {
        let w = &sql[t.start..t.end];
        w.eq_ignore_ascii_case("INSERT") || w.eq_ignore_ascii_case("REPLACE")
    })
}

/// Expression depth (as [`depth_bound`] counts it) planned on the caller's stack: a
/// debug build's passes over the tree take about 5 KiB of stack per level, and tokio's
/// threads have 2 MiB.
pub(super) const INLINE_DEPTH: usize = 128;

/// Stack of the thread that plans deeper statements (up to [`MAX_EXPR_DEPTH`]); memory is
/// only committed as it is used.
const DEEP_STACK: usize = 64 << 20;

/// A statement tokenized, ready to parse.
struct Parsed<'a> {
    named: String,
    src: Source<'a>,
    tokens: Vec<TokenWithSpan>,
    placeholder_count: usize,
}

fn plan_parsed(
    p: Parsed<'_>,
    current_db: Option<&str>,
    rules: &ShardRules,
) -> Result<Option<ShardPlan>, Refusal> {
    let Parsed {
        named,
        src,
        tokens,
        placeholder_count,
    } = p;
    let mut stmts = parse(tokens.clone()).map_err(|e| {
        Refusal(format!(
            "sluice: cannot parse this statement on sharded table {named}: {e}"
        ))
    })?;
    let stmt = match stmts.len() {
        0 => return Ok(None),
        1 => stmts.remove(0),
        _ => {
            return Err(Refusal(format!(
                "sluice: several statements in one query on sharded table {named} are not supported"
            )))
        }
    };
    let mut stmt = stmt;
    name_items_as_written(&mut stmt, &tokens, &src, &[]);
    let ctx = Ctx {
        rules,
        db: current_db,
        src,
        tokens,
        spliceable: true,
        forced_shards: None,
        values: None,
    };
    let hazards = refuse_read_hazards(&stmt, &ctx.tokens, ctx.src.text, &named)?;
    let planned = plan_statement(stmt, &ctx)?;
    refuse_hazards_across(hazards, planned.as_ref(), &named)?;
    if planned.is_some() && placeholder_count > 0 {
        return Err(Refusal(
            "sluice: a statement with ? placeholders on a sharded table is planned with its \
             parameter values (prepared statements)"
                .into(),
        ));
    }
    Ok(planned)
}

fn plan_statement(stmt: Statement, ctx: &Ctx<'_>) -> Result<Option<ShardPlan>, Refusal> {
    match stmt {
        Statement::Query(q) => select::plan_query(*q, ctx),
        Statement::Insert(i) => dml::plan_insert(i, ctx),
        Statement::Update(u) => dml::plan_update(u, ctx),
        Statement::Delete(d) => dml::plan_delete(d, ctx),
        Statement::CreateTable(_)
        | Statement::AlterTable(_)
        | Statement::Drop { .. }
        | Statement::Truncate(_)
        | Statement::CreateIndex(_)
        | Statement::RenameTable(_) => ddl::plan_ddl(&stmt, ctx),
        _ => match mentions_tokens(ctx.rules, &ctx.tokens) {
            Some(t) => Err(Refusal(format!(
                "sluice: {} on sharded table {t} is not supported",
                statement_kind(&ctx.tokens)
            ))),
            None => Ok(None),
        },
    }
}

/// The leading keywords of a statement (`SHOW CREATE TABLE`, `CREATE VIEW`, `DESCRIBE`).
fn statement_kind(tokens: &[TokenWithSpan]) -> String {
    let words: Vec<String> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .map_while(|t| match &t.token {
            Token::Word(w)
                if w.quote_style.is_none() && w.keyword != sqlparser::keywords::Keyword::NoKeyword =>
            {
                Some(w.value.to_ascii_uppercase())
            }
            _ => None,
        })
        .take(3)
        .collect();
    if words.is_empty() {
        "this statement".into()
    } else {
        words.join(" ")
    }
}

/// `PREPARE s FROM '…'` and `EXECUTE IMMEDIATE '…'` whose text names a sharded table: the
/// server would run that text on the logical table (1146, or another table of that name),
/// which sluice never planned. Refused; other statements that only mention a name in a
/// string go to the server untouched.
fn refuse_prepared_text(tokens: &[TokenWithSpan], rules: &ShardRules) -> Result<Option<ShardPlan>, Refusal> {
    use sqlparser::keywords::Keyword as K;
    let words: Vec<&Token> = tokens
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .take(2)
        .collect();
    let kw = |t: Option<&&Token>, k: K| matches!(t, Some(Token::Word(w)) if w.keyword == k && w.quote_style.is_none());
    let prepares =
        kw(words.first(), K::PREPARE) || (kw(words.first(), K::EXECUTE) && kw(words.get(1), K::IMMEDIATE));
    if !prepares {
        return Ok(None);
    }
    let names = tokens.iter().any(|t| match &t.token {
        Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => names_table_cheaply(s, rules),
        _ => false,
    });
    if names {
        return Err(Refusal(
            "sluice: PREPARE … FROM and EXECUTE IMMEDIATE of a statement on a sharded table are not \
             supported (prepare it through the protocol, or run it as a statement)"
                .into(),
        ));
    }
    Ok(None)
}

/// The first sharded table name that appears as an identifier token.
fn mentions_tokens(rules: &ShardRules, tokens: &[TokenWithSpan]) -> Option<String> {
    tokens.iter().find_map(|t| match &t.token {
        Token::Word(w) if rules.is_table_name(&w.value) => Some(w.value.clone()),
        _ => None,
    })
}

/// What planning needs besides the AST.
pub(crate) struct Ctx<'a> {
    pub rules: &'a ShardRules,
    pub db: Option<&'a str>,
    pub src: Source<'a>,
    /// The tokens the statement was parsed from (placeholders substituted).
    pub tokens: Vec<TokenWithSpan>,
    /// Token locations match the original text (no parameter was substituted).
    pub spliceable: bool,
    /// A prepared SELECT planned with its placeholders kept: the shards its values
    /// route to (from the plan with the values written in).
    pub forced_shards: Option<&'a [u32]>,
    /// The parameter values, for placeholders that must become numbers (`LIMIT ?`).
    pub values: Option<&'a [ParamValue]>,
}

/// A table name resolved to a shard rule.
pub(crate) struct Resolved<'a> {
    pub rule: &'a ShardRule,
    /// The database the name resolves to.
    pub db: String,
}

impl<'a> Ctx<'a> {
    /// The rule of the table `name` denotes, if it is sharded.
    pub(crate) fn resolve(&self, name: &ObjectName) -> Option<Resolved<'a>> {
        let ids = idents(name)?;
        let (db, table) = match ids.as_slice() {
            [t] => (self.db?.to_string(), t.value.as_str()),
            [d, t] => (d.value.clone(), t.value.as_str()),
            _ => return None,
        };
        let rule = self.rules.get(&db, table)?;
        Some(Resolved { rule, db })
    }

    /// The first sharded table name appearing as an identifier in `text` (conservative:
    /// a column or alias of that name counts too).
    pub(crate) fn mentions_text(&self, text: &str) -> Option<String> {
        if !self.rules.mentioned_in(text) {
            return None;
        }
        match tokenize(text) {
            Ok(tokens) => mentions_tokens(self.rules, &tokens),
            Err(_) => Some(text.to_string()),
        }
    }

    /// The first sharded table a query reads: in FROM and JOIN, derived tables, subqueries
    /// of any expression, CTEs and set operations (a correlated reference such as
    /// `post_reply.user_id` is not a read). Parts the walk cannot read are judged by their
    /// text (conservative).
    pub(crate) fn query_mentions(&self, q: &Query) -> Option<String> {
        let mut v = ReadsSharded {
            ctx: self,
            found: None,
        };
        match v.query(&mut q.clone()) {
            Ok(()) => v.found,
            Err(_) => self.mentions_text(&q.to_string()),
        }
    }
}

/// Finds the sharded tables a query reads (see [`Ctx::query_mentions`]).
struct ReadsSharded<'c, 'a> {
    ctx: &'c Ctx<'a>,
    found: Option<String>,
}

impl ReadsSharded<'_, '_> {
    fn set_expr(&mut self, body: &mut SetExpr, order_by: Option<&mut OrderBy>) -> Result<(), Refusal> {
        match body {
            SetExpr::Select(sel) => {
                for twj in &sel.from {
                    self.factor(&twj.relation);
                    for j in &twj.joins {
                        self.factor(&j.relation);
                    }
                }
                walk_select(sel, order_by, self)
            }
            SetExpr::Query(q) => self.query(q),
            SetExpr::SetOperation { left, right, .. } => {
                self.set_expr(left, None)?;
                self.set_expr(right, None)
            }
            SetExpr::Values(v) => {
                for row in &mut v.rows {
                    for e in &mut row.content {
                        walk(e, self)?;
                    }
                }
                Ok(())
            }
            other => {
                if self.found.is_none() {
                    self.found = self.ctx.mentions_text(&other.to_string());
                }
                Ok(())
            }
        }
    }

    fn factor(&mut self, f: &TableFactor) {
        if self.found.is_some() {
            return;
        }
        match f {
            TableFactor::Table { name, args: None, .. } => {
                self.found = self.ctx.resolve(name).map(|r| r.rule.table.clone());
            }
            TableFactor::NestedJoin { table_with_joins, .. } => {
                self.factor(&table_with_joins.relation);
                for j in &table_with_joins.joins {
                    self.factor(&j.relation);
                }
            }
            // Derived tables are reached as subqueries by `walk_select`.
            TableFactor::Derived { .. } => {}
            other => self.found = self.ctx.mentions_text(&other.to_string()),
        }
    }
}

impl Visit for ReadsSharded<'_, '_> {
    fn query(&mut self, q: &mut Query) -> Result<(), Refusal> {
        if self.found.is_some() {
            return Ok(());
        }
        if let Some(with) = &mut q.with {
            for cte in &mut with.cte_tables {
                self.query(&mut cte.query)?;
            }
        }
        let Query { body, order_by, .. } = q;
        self.set_expr(body, order_by.as_mut())
    }
}
