-- The grstats agent's MySQL account: SELECT on performance_schema, and on MySQL Shell's
-- InnoDB Cluster metadata, whose cluster_name names the group (granted even where the schema
-- does not exist: a group adopted into an InnoDB Cluster later shows its name then).
--
-- Run it once on the group's primary: Group Replication gives the account to every member.
-- Each agent logs in from its own host over 127.0.0.1 (deploy/systemd/agent.toml). The
-- password is the one in the agent's password file; it is set from a session variable, so
-- it is never on a command line and never in this file:
--
--   openssl rand -hex 24 > /etc/grstats/mysql-password     # on every member's host
--   { printf "SET @grstats_password = '%s';\n" "$(cat /etc/grstats/mysql-password)";
--     cat deploy/mysql/grstats-user.sql; } | mysql -h PRIMARY -u root -p
--
-- Running it again sets the password again (rotation). The password must not contain a
-- quote or a backslash (openssl rand -hex makes none). Works on MySQL 5.7, 8.0, 8.4 and
-- MariaDB. In Kubernetes (deploy/kubernetes), each member's init script runs it with
-- SQL_LOG_BIN=0 before the member joins the group.

SET @grstats_account = '''grstats''@''127.0.0.1''';

SET @grstats_statement = CONCAT(
    'CREATE USER IF NOT EXISTS ', @grstats_account,
    ' IDENTIFIED BY ', QUOTE(@grstats_password));
PREPARE grstats_statement FROM @grstats_statement;
EXECUTE grstats_statement;
DEALLOCATE PREPARE grstats_statement;

SET @grstats_statement = CONCAT(
    'ALTER USER ', @grstats_account, ' IDENTIFIED BY ', QUOTE(@grstats_password));
PREPARE grstats_statement FROM @grstats_statement;
EXECUTE grstats_statement;
DEALLOCATE PREPARE grstats_statement;

GRANT SELECT ON performance_schema.* TO 'grstats'@'127.0.0.1';
GRANT SELECT ON mysql_innodb_cluster_metadata.* TO 'grstats'@'127.0.0.1';

SET @grstats_password = NULL;
SET @grstats_statement = NULL;
