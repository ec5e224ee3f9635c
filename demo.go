package contextfold

// DemoTurns is the 8-turn demo session of the IPCF-1.1 specification: a
// PostgreSQL port that changes and changes back, and a migration that is
// applied, rolled back and re-applied (spec §9).
func DemoTurns() []Turn {
	return []Turn{
		{StepID: 37, Summary: "PostgreSQL configured on Port 5433", RawContent: "$ docker compose up -d postgres\nPostgreSQL running on port 5433"},
		{StepID: 91, Summary: "PostgreSQL switched to Port 5434 (conflict resolution)", RawContent: "$ psql -p 5434 -U admin\nConflict resolved on port 5434"},
		{StepID: 137, Summary: "PostgreSQL port 5434 reverted back to Port 5433", RawContent: "$ sed -i 's/5434/5433/' config.env\nPostgreSQL Port 5433 restored"},
		{StepID: 200, Summary: "Authentication middleware refactored; JWT secret rotated", RawContent: "JWT secret updated in auth/middleware.py"},
		{StepID: 318, Summary: "Migration V12 applied to production database", RawContent: "$ python manage.py migrate V12__TenantBilling.sql\nMigration V12 applied"},
		{StepID: 342, Summary: "Migration V12 rolled back due to deadlocks", RawContent: "Deadlock detected in billing table; rolled back V12"},
		{StepID: 447, Summary: "Migration V12 patched and re-applied successfully", RawContent: "Patched V12__TenantBilling.sql with row-level locks; migration complete"},
		{StepID: 499, Summary: "Final review: all services healthy, Port 5433 confirmed", RawContent: "All health checks passing on port 5433"},
	}
}

// DemoPrompt is the showcase question of the demo; scan picks 342, 137 and
// 447, in that order (spec §9).
const DemoPrompt = "What port are we using for PostgreSQL, and which migration applied the billing table?"

// DemoRecallQuery is the demo's temporal-disambiguation query (CONF-04).
const DemoRecallQuery = "PostgreSQL port"
