"""The back office: accounts, study management, invitations, monitoring and export for coordinators."""
