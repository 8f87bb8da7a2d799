"""The slips a learner makes in notebook 01's pieces and exercises: (what the learner did,
the text of the teacher's answer, what the learner wrote in its place, a word the report's
first line says)."""

SLIPS = {
    "pc01-ops-check": [
        ("+'s step sets the grads (=)",
         "self.grad += grad  # d(out)/d(self) = 1\n        other.grad += grad",
         "self.grad = grad  # d(out)/d(self) = 1\n        other.grad = grad", "(=)"),
        ("+'s step sets self.grad only (=)", "self.grad += grad  # d(out)/d(self) = 1",
         "self.grad = grad  # d(out)/d(self) = 1", "self.grad is set"),
        ("*'s slopes given to the wrong inputs",
         "self.grad += other.data * grad  # d(out)/d(self) = other\n"
         "        other.grad += self.data * grad",
         "self.grad += self.data * grad  # d(out)/d(self) = other\n"
         "        other.grad += other.data * grad", "wrong inputs"),
        ("*'s step for self uses self.data", "self.grad += other.data * grad",
         "self.grad += self.data * grad", "not self.data"),
        ("*'s step without the incoming grad",
         "self.grad += other.data * grad  # d(out)/d(self) = other\n"
         "        other.grad += self.data * grad",
         "self.grad += other.data  # d(out)/d(self) = other\n        other.grad += self.data",
         "incoming grad"),
        ("+ never sets out._backward",
         "other.grad += grad  # d(out)/d(other) = 1\n\n    out._backward = _backward",
         "other.grad += grad  # d(out)/d(other) = 1\n\n    pass", "_backward"),
        ("+ forgets other", "        other.grad += grad  # d(out)/d(other) = 1\n", "",
         "other.grad += grad"),
        ("the children the other way round", '(self, other), "+")', '(other, self), "+")',
         "children"),
        ("* labelled \"+\"", '(self, other), "*")', '(self, other), "+")', "labels"),
    ],
    "pc01-backward-check": [
        ("no visited set", "            visited.add(node)\n", "", "visited"),
        ("each node placed before its children",
         "            for child in node.children:\n                place(child)\n"
         "            order.append(node)  # after all of its inputs",
         "            order.append(node)\n            for child in node.children:\n"
         "                place(child)", "before its children"),
        ("the steps run inputs first", "for node in reversed(order):", "for node in order:",
         "reverse"),
        ("the grads not reset", "        node.grad = 0.0\n", "        pass\n", "set to 0"),
        ("the output's grad never set to 1", "    self.grad = 1.0\n", "", "not 1"),
        ("the output's grad set before the reset",
         "    for node in order:\n        node.grad = 0.0\n    self.grad = 1.0",
         "    self.grad = 1.0\n    for node in order:\n        node.grad = 0.0", "after"),
        ("each step gets 1.0", "node._backward(node.grad)", "node._backward(1.0)",
         "its own grad"),
        ("the order never returned", "    place(self)\n    return order", "    place(self)",
         "return"),
    ],
    "ex01-1-check": [
        ("+sin for the slope", "x.grad += -math.sin(x.data) * grad",
         "x.grad += math.sin(x.data) * grad", "minus"),
        ("the incoming grad left out", "-math.sin(x.data) * grad", "-math.sin(x.data)",
         "incoming grad"),
        ("x.grad set (=)", "x.grad += -math", "x.grad = -math", "(+=)"),
        ("sin for the value", "Value(math.cos(x.data)", "Value(math.sin(x.data)", "math.sin"),
        ("no children", '(x,), "cos")', '(), "cos")', "children"),
    ],
    "ex01-2-check": [
        ("section 1's answer at x = 2", "    return 4\n", "    return 8\n", "x = 2"),
        ("eps itself", "    return 4\n", "    return 1e-4\n", "not eps"),
    ],
    "ex01-3-check": [
        ("y's slope without its minus", "other.grad += -self.data / other.data**2 * grad",
         "other.grad += self.data / other.data**2 * grad", "minus"),
        ("x's slope times y", "self.grad += grad / other.data",
         "self.grad += grad * other.data", "divide"),
        ("tanh's slope from the input", "(1 - out.data**2) * grad", "(1 - self.data**2) * grad",
         "output"),
        ("tanh's step sets the grad (=)", "self.grad += (1 - out.data**2)",
         "self.grad = (1 - out.data**2)", "(+=)"),
        ("tanh's slope without the square", "(1 - out.data**2) * grad",
         "(1 - out.data) * grad", "square"),
    ],
    "ex01-4-check": [
        ("the 2 of the square forgotten", '"a": -24.0', '"a": -12.0', "the 2"),
        ("d(ab)/da taken as a", '"a": -24.0', '"a": 16.0', "d(ab)/da"),
        ("L without the square", '"L": 16.0', '"L": 4.0', "squared"),
        ("dL/dc as the last link only", '"c": 8.0', '"c": 1.0', "last link"),
    ],
}
