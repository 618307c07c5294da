from nodeprov.cli import app

app()
