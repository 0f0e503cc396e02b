"""Text analysis shared by ranking and explaining (`hql.text.analyzer`).

Kept free of imports: the analyser loads ICU, which only retrieval needs.
"""
