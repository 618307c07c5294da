"""``nodeprov run``: the user's script on every node: ``run``, ``runargs``, ``sync``,
``ranklog``, ``runfailures``, ``runreport``.
"""
