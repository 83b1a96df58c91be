"""HTTP: the client (one session, retries, typed errors) and its pacing."""
