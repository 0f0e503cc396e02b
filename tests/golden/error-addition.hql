// Reference 10: the report points at the operand.
// stage: typecheck
x = 1
  true + 1
