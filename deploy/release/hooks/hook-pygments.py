"""PyInstaller's hook for pygments in the grstats executable: only what Rich can ask for.

It replaces PyInstaller's own hook, which bundles every lexer, formatter and style (some 600
modules) for programs that highlight any language. grstats reaches pygments only through Rich
(rich.syntax, for a traceback it renders): the Python lexer and Rich's default theme are all
it can ask for, and pygments finds both by name at run time.
"""  # noqa: INP001  (a hook file PyInstaller loads by path, not a package's module)

hiddenimports = ["pygments.lexers.python", "pygments.styles.monokai"]
