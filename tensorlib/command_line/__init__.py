"""The command line, the top of the package: ``python -m tensorlib`` (``main``: it parses the
options and prints) and the names run it trains, saves as a folder and samples from
(``names_gpt``). It may import every folder below it; nothing imports it.
"""
