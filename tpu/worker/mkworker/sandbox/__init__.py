"""The candidate's process: the source gate that refuses a text before it runs (`gate`,
`gate_names`), the zygote that forks one child per task or candidate (`zygote`), the child's work
(`child`) and the judge's side of it (`sandbox`)."""
