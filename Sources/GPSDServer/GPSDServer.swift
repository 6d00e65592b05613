// Placeholder until this module's issue lands; see docs/ARCHITECTURE.md.
