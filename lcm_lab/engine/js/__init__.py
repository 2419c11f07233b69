"""JavaScript semantics the plugin relies on: ``JSON.stringify``/``JSON.parse``, UTF-16 string
operations and ECMAScript whitespace, ``undefined`` and truthiness."""
