// Behaviours of MariaDB Connector/J that a proxy can break, observed through the driver.
// Prints one `mode/check<TAB>observation` line per check; run once against MariaDB and once
// through sluice, and the two outputs are compared line by line (scripts/drivers/jdbc.sh).
// Observations hold only what must be the same on both sides: no connection ids, no timings.
//
//   java -cp mariadb-java-client.jar:DIR Checks HOST PORT DATABASE USER PASSWORD
//
// Every check runs twice: with the driver's default (client-side prepared statements,
// parameters interpolated into COM_QUERY) and with useServerPrepStmts=true (COM_STMT_PREPARE
// and COM_STMT_EXECUTE, binary rows).

import java.sql.*;
import java.util.*;
import java.util.concurrent.*;

public class Checks {
    interface Check {
        String run(Connection c, String t) throws Exception;
    }

    static String host, db, user, password;
    static int port;

    static Connection connect(String options) throws SQLException {
        String url = "jdbc:mariadb://" + host + ":" + port + "/" + db + "?" + options;
        return DriverManager.getConnection(url, user, password);
    }

    public static void main(String[] args) throws Exception {
        host = args[0];
        port = Integer.parseInt(args[1]);
        db = args[2];
        user = args[3];
        password = args.length > 4 ? args[4] : "";
        Map<String, Check> checks = new LinkedHashMap<>();
        checks.put("param_types", Checks::paramTypes);
        checks.put("column_metadata", Checks::columnMetadata);
        checks.put("generated_keys", Checks::generatedKeys);
        checks.put("batch", Checks::batch);
        checks.put("commit", Checks::commit);
        checks.put("rollback", Checks::rollback);
        checks.put("read_own_write", Checks::readOwnWrite);
        checks.put("cancel", Checks::cancel);
        checks.put("query_timeout", Checks::queryTimeout);
        checks.put("charsets", Checks::charsets);
        checks.put("warnings", Checks::warnings);
        checks.put("errors", Checks::errors);
        checks.put("session_state", Checks::sessionState);
        checks.put("temporary_table", Checks::temporaryTable);
        checks.put("blob_param", Checks::blobParam);
        checks.put("temporal", Checks::temporal);
        checks.put("update_counts", Checks::updateCounts);
        checks.put("streaming", Checks::streaming);
        checks.put("database_metadata", Checks::databaseMetadata);
        checks.put("multi_results", Checks::multiResults);
        String[][] modes = {{"text", "useServerPrepStmts=false"}, {"binary", "useServerPrepStmts=true"}};
        for (String[] mode : modes) {
            for (Map.Entry<String, Check> e : checks.entrySet()) {
                String table = "t_" + mode[0] + "_" + e.getKey();
                String seen;
                try (Connection c = connect(mode[1])) {
                    try (Statement s = c.createStatement()) {
                        s.execute("DROP TABLE IF EXISTS " + table);
                    }
                    seen = e.getValue().run(c, table);
                } catch (Exception ex) {
                    seen = "threw " + describe(ex);
                }
                System.out.println(mode[0] + "/" + e.getKey() + "\t" + seen.replace('\n', ' ').replace('\t', ' '));
            }
        }
    }

    // An exception as the application sees it, less the connection id the driver puts
    // into messages ("(conn=42) ...") and the query text it may append.
    static String describe(Throwable ex) {
        StringBuilder b = new StringBuilder(ex.getClass().getSimpleName());
        if (ex instanceof SQLException) {
            SQLException se = (SQLException) ex;
            b.append(" state=").append(se.getSQLState()).append(" code=").append(se.getErrorCode());
        }
        String msg = String.valueOf(ex.getMessage()).replaceAll("\\(conn[:=]\\d+\\) ?", "");
        int q = msg.indexOf("\nQuery is");
        if (q >= 0) msg = msg.substring(0, q);
        return b.append(" msg=").append(msg.trim()).toString();
    }

    static String rows(ResultSet rs) throws SQLException {
        StringBuilder b = new StringBuilder();
        int n = rs.getMetaData().getColumnCount();
        while (rs.next()) {
            b.append('[');
            for (int i = 1; i <= n; i++) {
                if (i > 1) b.append(',');
                Object o = rs.getObject(i);
                b.append(o == null ? "NULL" : o.getClass().getSimpleName() + ":" + valueText(o));
            }
            b.append(']');
        }
        return b.toString();
    }

    static String valueText(Object o) {
        if (o instanceof byte[]) return hex((byte[]) o);
        return String.valueOf(o);
    }

    static String hex(byte[] bytes) {
        StringBuilder b = new StringBuilder();
        for (byte x : bytes) b.append(String.format("%02x", x));
        return b.toString();
    }

    static void exec(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    static String query(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            return rows(rs);
        }
    }

    // Parameters of each common type, and the types and values they come back as.
    static String paramTypes(Connection c, String t) throws SQLException {
        try (PreparedStatement p = c.prepareStatement(
                "SELECT ?, ?, ?, ?, ?, ?, ?, CAST(? AS DECIMAL(10,3)), ? IS NULL")) {
            p.setInt(1, -42);
            p.setLong(2, 9007199254740993L);
            p.setDouble(3, 2.5);
            p.setString(4, "it's \"quoted\" \\ back");
            p.setBoolean(5, true);
            p.setNull(6, Types.VARCHAR);
            p.setBigDecimal(7, new java.math.BigDecimal("12345.6789"));
            p.setString(8, "3.14159");
            p.setNull(9, Types.INTEGER);
            try (ResultSet rs = p.executeQuery()) {
                return rows(rs);
            }
        }
    }

    static String columnMetadata(Connection c, String t) throws SQLException {
        exec(c, "CREATE TABLE " + t + " (id INT UNSIGNED PRIMARY KEY AUTO_INCREMENT, "
                + "name VARCHAR(40) CHARACTER SET utf8mb4 NOT NULL, price DECIMAL(8,2), "
                + "raw VARBINARY(16), flag TINYINT(1), at DATETIME(3), doc TEXT) ENGINE=InnoDB");
        try (PreparedStatement p = c.prepareStatement("SELECT id, name AS label, price, raw, flag, at, doc FROM " + t + " WHERE id > ?")) {
            p.setInt(1, 0);
            try (ResultSet rs = p.executeQuery()) {
                ResultSetMetaData m = rs.getMetaData();
                StringBuilder b = new StringBuilder();
                for (int i = 1; i <= m.getColumnCount(); i++) {
                    b.append(m.getColumnLabel(i)).append('/').append(m.getColumnName(i)).append('/')
                            .append(m.getTableName(i)).append(':').append(m.getColumnTypeName(i))
                            .append(" type=").append(m.getColumnType(i)).append(" prec=").append(m.getPrecision(i))
                            .append(" scale=").append(m.getScale(i)).append(" null=").append(m.isNullable(i))
                            .append(" signed=").append(m.isSigned(i)).append(" auto=").append(m.isAutoIncrement(i))
                            .append(" class=").append(m.getColumnClassName(i)).append("; ");
                }
                return b.toString();
            }
        }
    }

    static String generatedKeys(Connection c, String t) throws SQLException {
        exec(c, "CREATE TABLE " + t + " (id BIGINT PRIMARY KEY AUTO_INCREMENT, v INT) AUTO_INCREMENT=1000");
        StringBuilder b = new StringBuilder();
        try (PreparedStatement p = c.prepareStatement("INSERT INTO " + t + " (v) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
            p.setInt(1, 1);
            b.append("count=").append(p.executeUpdate());
            try (ResultSet rs = p.getGeneratedKeys()) {
                b.append(" keys=").append(rows(rs));
            }
        }
        try (Statement s = c.createStatement()) {
            b.append(" multi=").append(s.executeUpdate("INSERT INTO " + t + " (v) VALUES (2),(3),(4)", Statement.RETURN_GENERATED_KEYS));
            try (ResultSet rs = s.getGeneratedKeys()) {
                b.append(" keys=").append(rows(rs));
            }
        }
        return b.append(" last_insert_id=").append(query(c, "SELECT LAST_INSERT_ID()")).toString();
    }

    static String batch(Connection c, String t) throws SQLException {
        exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, v VARCHAR(10))");
        StringBuilder b = new StringBuilder();
        try (PreparedStatement p = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?)")) {
            for (int i = 1; i <= 5; i++) {
                p.setInt(1, i);
                p.setString(2, "v" + i);
                p.addBatch();
            }
            b.append("prepared=").append(Arrays.toString(p.executeBatch()));
        }
        try (Statement s = c.createStatement()) {
            s.addBatch("UPDATE " + t + " SET v = 'x' WHERE id <= 2");
            s.addBatch("DELETE FROM " + t + " WHERE id = 5");
            s.addBatch("INSERT INTO " + t + " VALUES (1, 'dup')");
            try {
                s.executeBatch();
                b.append(" no error");
            } catch (BatchUpdateException e) {
                b.append(" statement=").append(Arrays.toString(e.getUpdateCounts())).append(' ').append(describe(e));
            }
        }
        return b.append(" rows=").append(query(c, "SELECT * FROM " + t + " ORDER BY id")).toString();
    }

    static String commit(Connection c, String t) throws SQLException {
        exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY) ENGINE=InnoDB");
        c.setAutoCommit(false);
        exec(c, "INSERT INTO " + t + " VALUES (1), (2)");
        String inside = query(c, "SELECT COUNT(*) FROM " + t);
        String other;
        try (Connection o = connect("")) {
            other = query(o, "SELECT COUNT(*) FROM " + t);
            c.commit();
            other += " after commit " + query(o, "SELECT COUNT(*) FROM " + t);
        }
        c.setAutoCommit(true);
        return "inside=" + inside + " other=" + other;
    }

    static String rollback(Connection c, String t) throws SQLException {
        exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY) ENGINE=InnoDB");
        exec(c, "INSERT INTO " + t + " VALUES (1)");
        c.setAutoCommit(false);
        exec(c, "INSERT INTO " + t + " VALUES (2)");
        Savepoint sp = c.setSavepoint("sp1");
        exec(c, "INSERT INTO " + t + " VALUES (3)");
        c.rollback(sp);
        String afterSavepoint = query(c, "SELECT id FROM " + t + " ORDER BY id");
        c.rollback();
        c.setAutoCommit(true);
        return "after savepoint " + afterSavepoint + " after rollback " + query(c, "SELECT id FROM " + t + " ORDER BY id");
    }

    // A write, then at once a read on a new connection (another client): sluice must not
    // answer it from a replica that has not applied the write yet.
    static String readOwnWrite(Connection c, String t) throws SQLException {
        exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, v INT) ENGINE=InnoDB");
        StringBuilder b = new StringBuilder();
        for (int i = 1; i <= 20; i++) {
            try (PreparedStatement p = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?)")) {
                p.setInt(1, i);
                p.setInt(2, i * i);
                p.executeUpdate();
            }
            try (PreparedStatement p = c.prepareStatement("SELECT COUNT(*), SUM(v) FROM " + t)) {
                try (ResultSet rs = p.executeQuery()) {
                    b.append(rows(rs));
                }
            }
        }
        try (Connection o = connect("")) {
            b.append(" other=").append(query(o, "SELECT COUNT(*), SUM(v) FROM " + t));
        }
        return b.toString();
    }

    // Statement.cancel() from another thread: the driver opens a new connection and sends
    // KILL QUERY with the connection id the server (here: sluice) gave in its handshake.
    static String cancel(Connection c, String t) throws Exception {
        try (Statement s = c.createStatement()) {
            ScheduledExecutorService ex = Executors.newSingleThreadScheduledExecutor();
            ScheduledFuture<?> f = ex.schedule(() -> {
                try {
                    s.cancel();
                } catch (SQLException e) {
                    throw new RuntimeException(e);
                }
                return null;
            }, 700, TimeUnit.MILLISECONDS);
            long start = System.nanoTime();
            String seen;
            try (ResultSet rs = s.executeQuery("SELECT SLEEP(10)")) {
                seen = "result " + rows(rs);
            } catch (SQLException e) {
                seen = describe(e);
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            try {
                f.get();
            } catch (ExecutionException e) {
                seen += " cancel threw " + describe(e.getCause().getCause() != null ? e.getCause().getCause() : e.getCause());
            }
            ex.shutdown();
            return seen + " stopped_early=" + (ms < 8000) + " still_usable=" + query(c, "SELECT 1");
        }
    }

    // setQueryTimeout: Connector/J 2.x prefixes MariaDB statements with
    // SET STATEMENT max_statement_time=N FOR.
    static String queryTimeout(Connection c, String t) throws Exception {
        StringBuilder b = new StringBuilder();
        try (PreparedStatement p = c.prepareStatement("SELECT SLEEP(?)")) {
            p.setQueryTimeout(1);
            p.setInt(1, 5);
            long start = System.nanoTime();
            try (ResultSet rs = p.executeQuery()) {
                b.append("result ").append(rows(rs));
            } catch (SQLException e) {
                b.append(describe(e));
            }
            b.append(" stopped_early=").append((System.nanoTime() - start) / 1_000_000 < 4000);
        }
        return b.append(" still_usable=").append(query(c, "SELECT 2")).toString();
    }

    static String charsets(Connection c, String t) throws SQLException {
        exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, u VARCHAR(20) CHARACTER SET utf8mb4, "
                + "l VARCHAR(20) CHARACTER SET latin1, b VARBINARY(20))");
        String[] values = {"plain", "ünïcødé", "日本語", "emoji \uD83D\uDE00", ""};
        try (PreparedStatement p = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?, ?, ?)")) {
            for (int i = 0; i < values.length; i++) {
                p.setInt(1, i);
                p.setString(2, values[i]);
                p.setString(3, i == 1 ? "café" : "x");
                p.setBytes(4, values[i].getBytes(java.nio.charset.StandardCharsets.UTF_8));
                p.executeUpdate();
            }
        }
        StringBuilder b = new StringBuilder();
        try (PreparedStatement p = c.prepareStatement("SELECT u, l, HEX(u), HEX(l), b = CONVERT(u USING binary), CHAR_LENGTH(u) FROM " + t + " WHERE id >= ? ORDER BY id")) {
            p.setInt(1, 0);
            try (ResultSet rs = p.executeQuery()) {
                b.append(rows(rs));
            }
        }
        return b.append(" session=").append(query(c, "SELECT @@character_set_client, @@character_set_results, @@collation_connection")).toString();
    }

    static String warnings(Connection c, String t) throws SQLException {
        StringBuilder b = new StringBuilder();
        try (PreparedStatement p = c.prepareStatement("SELECT CAST(? AS SIGNED), 1 / 0")) {
            p.setString(1, "12abc");
            try (ResultSet rs = p.executeQuery()) {
                b.append(rows(rs));
            }
            for (SQLWarning w = p.getWarnings(); w != null; w = w.getNextWarning()) {
                b.append(" warning ").append(w.getSQLState()).append('/').append(w.getErrorCode()).append(' ').append(w.getMessage());
            }
        }
        for (SQLWarning w = c.getWarnings(); w != null; w = w.getNextWarning()) {
            b.append(" connection warning ").append(w.getErrorCode());
        }
        return b.append(" show=").append(query(c, "SHOW WARNINGS")).toString();
    }

    static String errors(Connection c, String t) throws SQLException {
        exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, v INT NOT NULL)");
        String[] statements = {
            "SELEC 1",
            "SELECT * FROM no_such_table_here",
            "INSERT INTO " + t + " VALUES (1, 1), (1, 2)",
            "INSERT INTO " + t + " VALUES (2, NULL)",
            "SELECT no_such_column FROM " + t,
            "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'custom', MYSQL_ERRNO = 1644",
        };
        StringBuilder b = new StringBuilder();
        for (String sql : statements) {
            try (PreparedStatement p = c.prepareStatement(sql)) {
                p.execute();
                b.append("[no error]");
            } catch (SQLException e) {
                b.append('[').append(describe(e)).append(']');
            }
        }
        return b.append(" after=").append(query(c, "SELECT COUNT(*) FROM " + t)).toString();
    }

    // Session state across statements: with multiplexing, each statement may run on another
    // backend connection, and the session's variables must follow.
    static String sessionState(Connection c, String t) throws SQLException {
        exec(c, "SET @jdbc_var = 41");
        exec(c, "SET SESSION sql_mode = 'ANSI_QUOTES'");
        exec(c, "SET time_zone = '+05:30'");
        StringBuilder b = new StringBuilder();
        try (PreparedStatement p = c.prepareStatement("SELECT @jdbc_var + ?, @@sql_mode, @@time_zone, DATABASE()")) {
            p.setInt(1, 1);
            try (ResultSet rs = p.executeQuery()) {
                b.append(rows(rs));
            }
        }
        c.setCatalog("mysql");
        b.append(" catalog=").append(c.getCatalog()).append(query(c, "SELECT DATABASE()"));
        c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
        b.append(" isolation=").append(query(c, "SELECT @@tx_isolation"));
        c.setReadOnly(true);
        b.append(" readonly=").append(c.isReadOnly());
        return b.toString();
    }

    static String temporaryTable(Connection c, String t) throws SQLException {
        exec(c, "CREATE TEMPORARY TABLE " + t + " (id INT, v VARCHAR(5))");
        try (PreparedStatement p = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?)")) {
            for (int i = 0; i < 3; i++) {
                p.setInt(1, i);
                p.setString(2, "r" + i);
                p.executeUpdate();
            }
        }
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < 5; i++) {
            b.append(query(c, "SELECT COUNT(*) FROM " + t));
        }
        return b.toString();
    }

    static String blobParam(Connection c, String t) throws SQLException {
        exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, b LONGBLOB)");
        byte[] all = new byte[256];
        for (int i = 0; i < 256; i++) all[i] = (byte) i;
        byte[] big = new byte[3 * 1024 * 1024];
        for (int i = 0; i < big.length; i++) big[i] = (byte) (i * 31 + 7);
        try (PreparedStatement p = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?)")) {
            p.setInt(1, 1);
            p.setBytes(2, all);
            p.executeUpdate();
            p.setInt(1, 2);
            p.setBinaryStream(2, new java.io.ByteArrayInputStream(big), big.length);
            p.executeUpdate();
        }
        StringBuilder b = new StringBuilder();
        try (PreparedStatement p = c.prepareStatement("SELECT id, LENGTH(b), MD5(b), b FROM " + t + " WHERE id = ?")) {
            p.setInt(1, 1);
            try (ResultSet rs = p.executeQuery()) {
                b.append(rows(rs));
            }
            p.setInt(1, 2);
            try (ResultSet rs = p.executeQuery()) {
                rs.next();
                byte[] back = rs.getBytes(4);
                b.append(" big len=").append(rs.getLong(2)).append(" md5=").append(rs.getString(3))
                        .append(" same=").append(Arrays.equals(back, big));
            }
        }
        return b.toString();
    }

    static String temporal(Connection c, String t) throws SQLException {
        exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, d DATE, dt DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2), y YEAR)");
        try (PreparedStatement p = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?, ?, ?, ?, ?)")) {
            p.setInt(1, 1);
            p.setDate(2, java.sql.Date.valueOf("2024-02-29"));
            p.setTimestamp(3, Timestamp.valueOf("2024-02-29 23:59:59.123456"));
            p.setTimestamp(4, Timestamp.valueOf("2001-09-09 01:46:40.5"));
            p.setString(5, "-838:59:59.99");
            p.setInt(6, 2155);
            p.executeUpdate();
        }
        try (PreparedStatement p = c.prepareStatement("SELECT d, dt, ts, CAST(tm AS CHAR), y, DATE_ADD(dt, INTERVAL ? SECOND) FROM " + t + " WHERE id = 1")) {
            p.setInt(1, 1);
            try (ResultSet rs = p.executeQuery()) {
                return rows(rs);
            }
        }
    }

    static String updateCounts(Connection c, String t) throws SQLException {
        exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, v INT)");
        exec(c, "INSERT INTO " + t + " VALUES (1, 1), (2, 2), (3, 3)");
        StringBuilder b = new StringBuilder();
        try (PreparedStatement p = c.prepareStatement("UPDATE " + t + " SET v = ? WHERE id <= 2")) {
            p.setInt(1, 1);
            // Connector/J reports matched rows (CLIENT_FOUND_ROWS) unless useAffectedRows.
            b.append("update=").append(p.executeUpdate());
        }
        try (PreparedStatement p = c.prepareStatement("INSERT INTO " + t + " VALUES (?, 9) ON DUPLICATE KEY UPDATE v = 9")) {
            p.setInt(1, 3);
            b.append(" upsert=").append(p.executeUpdate());
        }
        try (Statement s = c.createStatement()) {
            b.append(" delete=").append(s.executeUpdate("DELETE FROM " + t + " WHERE id > 100"));
            b.append(" ddl=").append(s.executeUpdate("ALTER TABLE " + t + " ADD COLUMN w INT"));
        }
        return b.toString();
    }

    static String streaming(Connection c, String t) throws SQLException {
        exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, pad CHAR(100))");
        exec(c, "INSERT INTO " + t + " SELECT seq, REPEAT('x', 100) FROM seq_1_to_20000");
        long n = 0, sum = 0;
        try (PreparedStatement p = c.prepareStatement("SELECT id, pad FROM " + t + " WHERE id > ? ORDER BY id")) {
            p.setFetchSize(100);
            p.setInt(1, 0);
            try (ResultSet rs = p.executeQuery()) {
                while (rs.next()) {
                    n++;
                    sum += rs.getInt(1);
                    if (n == 10) break; // leave the rest unread: the driver must skip it
                }
            }
        }
        return "read=" + n + " sum=" + sum + " then=" + query(c, "SELECT COUNT(*) FROM " + t);
    }

    static String databaseMetadata(Connection c, String t) throws SQLException {
        exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, name VARCHAR(10) NOT NULL DEFAULT 'n', KEY byname (name))");
        DatabaseMetaData m = c.getMetaData();
        StringBuilder b = new StringBuilder();
        b.append("product=").append(m.getDatabaseProductName());
        try (ResultSet rs = m.getColumns(db, null, t, "%")) {
            while (rs.next()) {
                b.append(' ').append(rs.getString("COLUMN_NAME")).append(':').append(rs.getString("TYPE_NAME"))
                        .append('/').append(rs.getString("COLUMN_DEF")).append('/').append(rs.getString("IS_NULLABLE"));
            }
        }
        try (ResultSet rs = m.getIndexInfo(db, null, t, false, false)) {
            while (rs.next()) {
                b.append(" index ").append(rs.getString("INDEX_NAME")).append('.').append(rs.getString("COLUMN_NAME"));
            }
        }
        try (ResultSet rs = m.getPrimaryKeys(db, null, t)) {
            while (rs.next()) b.append(" pk ").append(rs.getString("COLUMN_NAME"));
        }
        return b.toString();
    }

    // Several results from one call: allowMultiQueries=true (a second connection with it).
    static String multiResults(Connection c0, String t) throws SQLException {
        try (Connection c = connect("allowMultiQueries=true"); Statement s = c.createStatement()) {
            StringBuilder b = new StringBuilder();
            boolean isResult = s.execute("SELECT 1; DO 0; SELECT 'two', 3; SET @x = 5; SELECT @x");
            while (true) {
                if (isResult) {
                    try (ResultSet rs = s.getResultSet()) {
                        b.append(rows(rs));
                    }
                } else {
                    int n = s.getUpdateCount();
                    if (n == -1) break;
                    b.append("{").append(n).append("}");
                }
                isResult = s.getMoreResults();
            }
            return b.toString();
        }
    }
}
