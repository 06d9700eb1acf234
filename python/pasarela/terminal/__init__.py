"""Area A of the spec: the signed and encrypted terminal request envelope."""

from . import counting

counting.install()  # with pasarela[otel]: Terminal's seals and opens counted (once, whichever module is imported first)
