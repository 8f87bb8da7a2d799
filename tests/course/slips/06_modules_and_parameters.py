"""Slips a learner makes in notebook 06, and a word the first line of the check's report must
hold for each (``scripts/slip_table.py 06_modules_and_parameters``)."""

_OWN_THEN_CHILDREN = """\
            for name, parameter in module._parameters.items():
                if id(parameter) not in seen:
                    seen.add(id(parameter))
                    yield prefix + name, parameter
            for name, child in module._modules.items():
                yield from walk(child, prefix + name + ".")
"""
_CHILDREN_THEN_OWN = """\
            for name, child in module._modules.items():
                yield from walk(child, prefix + name + ".")
            for name, parameter in module._parameters.items():
                if id(parameter) not in seen:
                    seen.add(id(parameter))
                    yield prefix + name, parameter
"""
_PLAIN = "object.__setattr__(self, name, value)      # a plain attribute"

SLIPS = {
    "pc06-tinymodule-check": [
        ("setattr(self, name, value) for a plain attribute", _PLAIN,
         "setattr(self, name, value)", "object.__setattr__"),
        ("a plain attribute not stored at all", _PLAIN, "pass", "not stored"),
        ("any tensor filed as a parameter", "isinstance(value, TinyParameter)",
         "isinstance(value, tl.Tensor)", "not a TinyParameter"),
        ("own parameters after the children's", _OWN_THEN_CHILDREN, _CHILDREN_THEN_OWN,
         "after the children"),
        ("no dot between a child's name and its members'", 'prefix + name + ".")',
         "prefix + name)", "without a dot"),
        ("the prefix argument ignored", "yield from walk(self, prefix)",
         'yield from walk(self, "")', "prefix not used"),
        ("a tied tensor yielded under every name", "if id(parameter) not in seen:", "if True:",
         "tied tensor"),
        ("one set of seen ids per module", "        def walk(module, prefix):\n",
         "        def walk(module, prefix):\n            seen = set()\n", "not one per module"),
        ("state_dict keeps the parameters' own arrays", "parameter.numpy().copy()",
         "parameter.numpy()", "copy"),
        ("state_dict keeps the Tensors", "parameter.numpy().copy()", "parameter", "Tensor"),
    ],
    "ex06-1-check": [
        ("the module itself not yielded", "    yield prefix, module\n", "", "not yielded"),
        ("a dot in front of the root's children", 'prefix + "." + name if prefix else name',
         'prefix + "." + name', "dot in front"),
        ("a child named by its own name alone", 'prefix + "." + name if prefix else name',
         "name", "own name alone"),
    ],
    "ex06-2-check": [
        ("the tensors counted, not their elements", "parameter.numel()", "1",
         "tensors counted"),
        ("only the first axis counted", "parameter.numel()", "parameter.shape[0]", "shape[0]"),
    ],
    "ex06-3-check": [
        ("the skip path forgotten", "return x + self.f(x)", "return self.f(x)", "skip path"),
        ("super().__init__() not called", "super().__init__()\n", "", "super().__init__()"),
        ("the child filed under another name", "self.f = f", "self.inner = f", "self.f = f"),
    ],
    "ex06-4-check": [
        ("startswith(keep) without the dot", 'name.startswith(keep + ".")',
         "name.startswith(keep)", "without the dot"),
        ("the kept module frozen instead", 'parameter.trainable = name.startswith(keep + ".")',
         'parameter.trainable = not name.startswith(keep + ".")', "other way round"),
    ],
}
