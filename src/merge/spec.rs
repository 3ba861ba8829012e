//! The merge contract: what the shard planner (`src/shard/`) tells the merger about a
//! cross-shard SELECT. Plain data, no SQL text.
//!
//! Column indices always refer to the columns of each shard's result set (every shard
//! runs the same rewritten statement, so all return the same columns). After grouping,
//! the merged row keeps the same column positions: an aggregate's output replaces the
//! shard's partial value in place, so `HAVING` and `order_after` use the same indices.

/// How to merge the result sets of one statement sent to several shards.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeSpec {
    /// Columns the client sees: the first `visible` columns of each shard's result;
    /// later ones are helper columns (hidden sort keys, AVG counts) to strip.
    pub visible: usize,
    /// Order of the merged stream (column indices into the shard result; each shard
    /// already returns rows in this order). For grouped queries this is the order in
    /// which the shards return their partial groups: it must start with the group keys
    /// (in any order and direction), followed by the `COUNT(DISTINCT x)` column if any.
    /// Empty: no order (sources are concatenated in source order).
    pub order_by: Vec<SortKey>,
    /// Applied after merging (shards were asked for `LIMIT 0, offset+count`).
    pub limit: Option<Limit>,
    /// Shards return partial groups sorted by the group keys.
    pub group: Option<GroupSpec>,
    /// DISTINCT over the visible columns (shards return rows sorted by all visible
    /// columns: the first `visible` entries of `order_by` must name each visible column).
    pub distinct: bool,
}

impl MergeSpec {
    /// A plain merge: all columns visible, no order, no limit, no grouping.
    pub fn concat(visible: usize) -> Self {
        MergeSpec {
            visible,
            order_by: Vec::new(),
            limit: None,
            group: None,
            distinct: false,
        }
    }
}

/// One ORDER BY term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    pub col: usize,
    pub desc: bool,
}

impl SortKey {
    pub fn asc(col: usize) -> Self {
        SortKey { col, desc: false }
    }
    pub fn desc(col: usize) -> Self {
        SortKey { col, desc: true }
    }
}

/// `LIMIT offset, count` of the original statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub offset: u64,
    pub count: u64,
}

/// GROUP BY (or aggregates without GROUP BY: `keys` empty, one group).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSpec {
    /// Group key columns.
    pub keys: Vec<usize>,
    /// Aggregate columns (each holds the shard's partial aggregate).
    pub aggs: Vec<AggSpec>,
    /// HAVING, over the merged row (aggregates already final), three-valued logic.
    pub having: Option<Expr>,
    /// Final order when it differs from the group-key order (then groups are buffered:
    /// memory O(groups), or O(offset+count) with a LIMIT).
    pub order_after: Vec<SortKey>,
    /// DISTINCT aggregates of several different expressions: tagged sub-streams.
    pub tagged: Option<Box<Tagged>>,
    /// GROUP_CONCAT columns: sub-groups concatenated in the merged order.
    pub concat: Option<Box<Concat>>,
}

/// GROUP_CONCAT(args ORDER BY k… SEPARATOR s) of one or more columns sharing the same
/// ORDER BY: the shards group by (keys, k…, the bytes of each GROUP_CONCAT's args) and
/// sort by (keys, k…), so within a group the sub-groups arrive in the GROUP_CONCAT's
/// order, each holding equal values; the shard's column is the sub-group's own
/// `GROUP_CONCAT(args SEPARATOR s)` (m copies of one value v, typed as the server types
/// the original), which the merge appends in order and cuts at `group_concat_max_len`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Concat {
    /// `COUNT(*)` of the sub-group (m: how many values its partial holds).
    pub rows_col: usize,
    /// `@@group_concat_max_len` of the session (the shards' connections are in sync
    /// with it).
    pub max_len_col: usize,
    pub items: Vec<ConcatItem>,
}

/// One GROUP_CONCAT column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConcatItem {
    /// The sub-group's partial (output replaces it in place).
    pub col: usize,
    /// `SUM(LENGTH(CONCAT(args)))` of the sub-group: the bytes of its m values.
    pub len_col: usize,
    /// The separator, as the server gives its literal (`','` without SEPARATOR).
    pub sep_col: usize,
    /// `GROUP_CONCAT(DISTINCT x ORDER BY x)`: the column of x (its order key); runs of
    /// equal x (under x's collation) in a group are taken once.
    pub distinct_col: Option<usize>,
}

/// DISTINCT aggregates of several different expressions x_0, x_1, …: every shard row
/// carries a tag j (column `tag_col`, the text `j`) and belongs to the sub-stream of x_j:
/// the shards group by (keys, tag, x_0 when the tag is 0 else NULL, x_1 when the tag is 1
/// else NULL, …) and sort by the same, so within a group the rows of tag j come together,
/// sorted by x_j. COUNT/SUM/AVG(DISTINCT x_j) (x in `x_cols[j]`) read the rows of tag j
/// only; every other aggregate reads the rows of tag 0 (each tag's rows are partials of
/// the same rows of the group, so one tag's suffice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tagged {
    pub tag_col: usize,
    pub x_cols: Vec<usize>,
    /// x columns that are a column of the sharded table behind a CASE, which the server
    /// describes with the connection's collation: the executor looks the column's up.
    pub collation_of: Vec<CollationOf>,
}

/// Column `col` compares under the collation of column `column` of `schema.table`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollationOf {
    pub col: usize,
    pub schema: String,
    pub table: String,
    pub column: String,
}

/// One aggregate column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggSpec {
    pub col: usize,
    pub kind: AggKind,
}

/// How partial aggregates of one group combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggKind {
    /// Shard column holds `COUNT(..)`: counts add.
    Count,
    /// Shard column holds `SUM(x)`: sums add (exactly for integers and DECIMAL).
    Sum,
    Min,
    Max,
    /// AVG = SUM(col) / COUNT in column `count_col`; output replaces `col`.
    /// The shard column `col` holds `SUM(x)`, `count_col` holds `COUNT(x)`.
    Avg {
        count_col: usize,
    },
    /// COUNT(DISTINCT x): shards return rows grouped by (keys…, x) sorted by (keys…, x);
    /// column `col` holds x. Counts distinct non-NULL x per group across shards; the
    /// output (a BIGINT) replaces `col`.
    CountDistinct,
    /// SUM(DISTINCT x): shards return rows grouped by (keys…, x) sorted by (keys…, x), as for
    /// COUNT(DISTINCT x) with x in column `x_col`; column `col` holds the sub-group's
    /// `SUM(DISTINCT x)` (x itself, typed as the server types the SUM). Each run of equal x
    /// in a group is summed once.
    SumDistinct {
        x_col: usize,
    },
    /// AVG(DISTINCT x): like [`AggKind::SumDistinct`], `col` holding `SUM(DISTINCT x)` and
    /// `count_col` the sub-group's `COUNT(DISTINCT x)`; both taken once per run of equal x.
    AvgDistinct {
        count_col: usize,
        x_col: usize,
    },
}

impl AggKind {
    /// The column of x for aggregates merged once per distinct x (COUNT/SUM/AVG DISTINCT
    /// over the (keys, x) stream), given the aggregate's own column.
    pub fn distinct_arg(self, col: usize) -> Option<usize> {
        match self {
            AggKind::CountDistinct => Some(col),
            AggKind::SumDistinct { x_col } | AggKind::AvgDistinct { x_col, .. } => Some(x_col),
            _ => None,
        }
    }
}

/// A HAVING expression over the merged row, evaluated with SQL three-valued logic.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Col(usize),
    Lit(Value),
    Cmp(Box<Expr>, CmpOp, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    IsNull(Box<Expr>),
}

impl Expr {
    /// `Expr::Cmp` without the boxing noise.
    pub fn cmp(a: Expr, op: CmpOp, b: Expr) -> Expr {
        Expr::Cmp(Box::new(a), op, Box::new(b))
    }
    pub fn and(a: Expr, b: Expr) -> Expr {
        Expr::And(Box::new(a), Box::new(b))
    }
    pub fn or(a: Expr, b: Expr) -> Expr {
        Expr::Or(Box::new(a), Box::new(b))
    }
    #[allow(clippy::should_implement_trait)]
    pub fn not(a: Expr) -> Expr {
        Expr::Not(Box::new(a))
    }
    pub fn is_null(a: Expr) -> Expr {
        Expr::IsNull(Box::new(a))
    }
}

/// Comparison operators of HAVING.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A literal (in HAVING) or a decoded binary-protocol value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    UInt(u64),
    /// An exact decimal number as text, e.g. `-12.50` (a DECIMAL literal).
    Decimal(String),
    /// An approximate number (a literal written with an exponent, FLOAT/DOUBLE).
    Double(f64),
    /// A string literal (or a binary-protocol string / temporal value in text form).
    Bytes(Vec<u8>),
}
