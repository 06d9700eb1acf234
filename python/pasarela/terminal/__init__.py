"""Area A of the spec: the signed and encrypted terminal request envelope."""
