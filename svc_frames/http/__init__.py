"""HTTP: the transport alone (session, pacing, retries, answers as typed errors, auth, the
daily quota), composed by ``client.HttpClient``; records are the records layer's."""
