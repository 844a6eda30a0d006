"""The papers: one package each, everything a paper needs beyond its YAML.

``papers/<paper>/`` holds the paper's loaders (registered by name with
`reprobook.core.loaders.loader`), the output formats no other paper has, and generators of run
inputs (`reprobook.core.inputs.generator`). Its ``__init__`` imports the modules that register
something; that is the paper's one registration point. The engine finds the packages through
`reprobook.core.plugins`, never by name, and a paper never imports another paper.
"""
