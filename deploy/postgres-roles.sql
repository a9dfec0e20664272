-- agentsession on PostgreSQL with two roles (docs/server.md, "Deploying").
-- Run as a superuser (or a role with CREATEROLE) connected to the database the servers use.
-- agentsession_owner owns the schema and the store's tables and runs `agentsession upgrade`;
-- the servers connect as agentsession_app, which reads and writes rows. It may also create
-- tables in the schema: the server makes its two small tables (owners, cancel requests) at
-- first use. It cannot alter or drop the store's tables, which the owner role owns.
-- Give both roles a password (psql: \password agentsession_app) or another way in (pg_hba.conf).

CREATE ROLE agentsession_owner LOGIN;
CREATE ROLE agentsession_app LOGIN;
CREATE SCHEMA agentsession AUTHORIZATION agentsession_owner;
ALTER ROLE agentsession_owner SET search_path = agentsession;
ALTER ROLE agentsession_app SET search_path = agentsession;
GRANT USAGE, CREATE ON SCHEMA agentsession TO agentsession_app;
-- Tables the owner makes now and in later migrations: rows for the app.
ALTER DEFAULT PRIVILEGES FOR ROLE agentsession_owner IN SCHEMA agentsession
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO agentsession_app;
ALTER DEFAULT PRIVILEGES FOR ROLE agentsession_owner IN SCHEMA agentsession
    GRANT USAGE, SELECT ON SEQUENCES TO agentsession_app;
-- Tables made before these lines (a database in use already):
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA agentsession TO agentsession_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA agentsession TO agentsession_app;

-- Then, as the owner (and again after every upgrade of the package, before servers of the new
-- version start):
--   agentsession --db postgresql://agentsession_owner@DBHOST/DBNAME upgrade
