"""Building tasks: the generator registry (`registry`), what a generator yields (`spec`),
rendering (`render`), crash-safe staging (`staging`), splits, dataset versions and the
build itself (`build`); the reply judge (`judge`). The built-in generators are in
`rlforge.tasks.generators`."""
